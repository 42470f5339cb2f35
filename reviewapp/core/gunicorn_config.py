"""gunicorn's configuration for Open Hypothesis: `gunicorn -c python:reviewapp.core.gunicorn_config`, as `make run`
starts it and as production may (README "Production"); options on the command line win over it.

Threads (gthread): a reviewer's autosave and a coordinator's import wait mostly on the database, so WEB_THREADS
threads in each of WEB_WORKERS processes serve them, on SQLite (one file, WAL) as on PostgreSQL. Connections are kept
open between requests for KEEPALIVE_SECONDS, longer than the longest interval at which a page asks the server again
(autosaves, progress polls every 2–30 s): at gunicorn's default of 2 s a browser's next autosave could meet a
connection the server was just closing, and see it reset. With OH_LOG_FILE set (`make run`), gunicorn's own log and
its access log go to that file and only its warnings and errors to the terminal, as the application's do.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")

from django.conf import settings  # noqa: E402  (the settings module must be named first)

# nginx's default keep-alive: well over any page's interval, short enough to free idle threads.
KEEPALIVE_SECONDS = 75

wsgi_app = "reviewapp.wsgi:application"
bind = [f"[{settings.HOST}]:{settings.PORT}" if ":" in settings.HOST else f"{settings.HOST}:{settings.PORT}"]
worker_class = "gthread"
workers = settings.WEB_WORKERS
threads = settings.WEB_THREADS
keepalive = KEEPALIVE_SECONDS

if settings.OH_LOG_FILE:
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"timed": {"format": settings.LOG_FILE_FORMAT}},
        "handlers": {
            "file": {"class": "logging.FileHandler", "filename": settings.OH_LOG_FILE, "formatter": "timed"},
            "terminal": {"class": "logging.StreamHandler", "level": "WARNING", "formatter": "timed"},
        },
        "root": {"level": "INFO", "handlers": ["file", "terminal"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["file", "terminal"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["file"], "propagate": False},
        },
    }
