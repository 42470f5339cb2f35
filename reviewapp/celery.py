import os

from celery import Celery
from celery.signals import worker_ready

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
