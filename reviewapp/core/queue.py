"""Handing work to Celery workers: by task name, once the current transaction commits.

Services name the task instead of importing it, so a room's tasks module (which imports its services) is never
imported back by them; each room's AppConfig.ready() imports its own tasks module, which registers the names.
"""

from celery import current_app
from django.db import transaction


def enqueue_on_commit(task_name: str, *args) -> None:
    """Send the task with these arguments (primary keys) when the transaction commits; at once outside one."""
    transaction.on_commit(lambda: current_app.tasks[task_name].delay(*args))
