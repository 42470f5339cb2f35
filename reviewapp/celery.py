import logging
import os
import sys

from celery import Celery, bootsteps
from celery.concurrency.thread import TaskPool as ThreadTaskPool
from celery.signals import after_setup_logger, worker_ready

# How often a threads-pool worker's event loop wakes up to acknowledge finished tasks and take new ones.
WAKE_SECONDS = 0.1

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")

app = Celery("openhypothesis")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _mark_worker_ready(**kwargs):
    # bin/run-local prints the start-up banner once the worker is ready: it names a file for the worker to create.
    ready_file = os.environ.get("OH_WORKER_READY_FILE")
    if ready_file:
        with open(ready_file, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))


@after_setup_logger.connect
def _warnings_to_the_terminal_too(logger, logfile, format, **kwargs):
    # With --logfile (`make run` names one per server) Celery writes every record to the file; its warnings and
    # errors reach the terminal as well, as the web server's do. sys.__stderr__: Celery replaces sys.stderr with a
    # proxy that logs what is written to it.
    if logfile:
        terminal = logging.StreamHandler(sys.__stderr__)
        terminal.setLevel(logging.WARNING)
        terminal.setFormatter(logging.Formatter(format))
        logger.addHandler(terminal)


class WakeThreadsPoolConsumer(bootsteps.StartStopStep):
    """With the threads pool a task ends on another thread than the consumer's event loop, which acknowledges it
    (acks are late) and takes the next message only when it next wakes up: up to the loop's timer interval later
    (seconds) when nothing else wakes it, so a worker whose threads were all busy took its next tasks in bursts
    seconds apart (a known limitation of Celery's threads pool). A timer every WAKE_SECONDS keeps the loop awake."""

    requires = ("celery.worker.consumer:Connection",)

    def start(self, consumer):
        if isinstance(consumer.pool, ThreadTaskPool) and consumer.timer is not None:
            consumer.timer.call_repeatedly(WAKE_SECONDS, _nothing)


def _nothing():
    pass


app.steps["consumer"].add(WakeThreadsPoolConsumer)
