"""Handing work to Celery workers: by task name, once the current transaction commits.

Services name the task instead of importing it, so a room's tasks module (which imports its services) is never
imported back by them; each room's AppConfig.ready() imports its own tasks module, which registers the names.

A service that starts work first calls `broker_check`: with the broker down it refuses (503) before writing anything,
instead of creating work no worker will hear of. Should the broker fail between that check and the commit, the send
is logged and the sweeper (reviewapp.core.claims) finds the work that did not move.
"""

import logging

from celery import current_app
from django.db import transaction
from rest_framework import status

from reviewapp.core.errors import ServiceError

logger = logging.getLogger(__name__)


class QueueUnavailable(ServiceError):
    code = "queue_unavailable"
    status = status.HTTP_503_SERVICE_UNAVAILABLE


def broker_check(timeout: float = 3.0) -> None:
    """Raise QueueUnavailable unless the broker accepts a connection (eager mode, for tests and scripts, needs none)."""
    if current_app.conf.task_always_eager:
        return
    try:
        with current_app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=0, timeout=timeout)
    except Exception as exc:  # kombu and the transports raise many kinds of connection error
        logger.error("The Celery broker is unreachable: %s", exc)
        raise QueueUnavailable(
            "The work queue cannot be reached just now, so nothing was started. Try again in a minute.",
            retry_after=60,
        ) from None


def _send(task_name: str, args: tuple) -> None:
    try:
        current_app.tasks[task_name].delay(*args)
    except Exception:  # the commit is done: the sweeper will find the work that did not move
        logger.exception("Could not send %s%s to the broker", task_name, args)


def enqueue_on_commit(task_name: str, *args) -> None:
    """Send the task with these arguments (primary keys) when the transaction commits; at once outside one."""
    transaction.on_commit(lambda: _send(task_name, args))
