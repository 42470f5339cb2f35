"""The project's Celery app: a threads-pool worker keeps its consumer's event loop awake, so that it takes its next
task as soon as a thread is free, not seconds later (reviewapp/celery.py)."""

import pytest
from celery.contrib.testing.worker import start_worker

from reviewapp import celery as project_celery
from reviewapp.celery import app
from tests.screening_support import celery_on_test_redis, wait_for

pytestmark = [pytest.mark.broker]


def _wakes(consumer) -> bool:
    queued = getattr(consumer.timer, "queue", []) if consumer is not None and consumer.timer is not None else []
    return any(getattr(item.entry.fun, "__wrapped__", None) is project_celery._nothing for item in queued)


def test_a_threads_pool_worker_keeps_its_event_loop_awake(settings, monkeypatch, redis_url):
    with celery_on_test_redis(settings, monkeypatch, redis_url, "wake"):
        with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=30) as worker:
            wait_for(lambda: _wakes(worker.consumer), timeout=30, what="the wake-up timer")
            steps = {type(step) for step in worker.consumer.blueprint.steps.values()}
            assert project_celery.WakeThreadsPoolConsumer in steps
