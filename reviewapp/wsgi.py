import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
application = get_wsgi_application()


# Imported once the application (and so every app) is ready: the figures read the analyses' models.
from reviewapp.figures import new_figure, render  # noqa: E402


def _preload() -> None:
    """Load now what the first visitor would otherwise wait for: every view module (and through them scipy,
    statsmodels and the analyses), which Django imports on the first request, and matplotlib with its fonts, which
    take seconds on the first figure a process draws."""
    import_module(settings.ROOT_URLCONF)
    figure = new_figure(1.0, 1.0)
    figure.add_subplot().set_xlabel("start-up")
    render(figure, "png")


_preload()
