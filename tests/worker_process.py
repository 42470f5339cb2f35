"""A Celery worker of the project in a process of its own, for tests that kill it (`python -m tests.worker_process
PREFIX [--beat SCHEDULE]`). The database and the broker come from the environment the test gives it; PREFIX is the
broker key prefix the test process sends its messages under."""

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from reviewapp.celery import app  # noqa: E402


def main(prefix: str, *options: str) -> None:
    # Celery reads the Django settings (namespace CELERY) when it first connects, as the test process does.
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": prefix}
    arguments = ["worker", "--pool=threads", "--concurrency=8", "--loglevel=WARNING", "--without-gossip"]
    if options[:1] == ("--beat",):
        arguments += ["--beat", "--schedule", options[1]]
    app.worker_main(arguments)


if __name__ == "__main__":
    main(*sys.argv[1:])
