from django.apps import AppConfig


class ScreeningConfig(AppConfig):
    name = "screening"
    verbose_name = "Screening"

    def ready(self):
        # Registers the pipeline's Celery tasks, which services send by name (reviewapp.core.queue).
        from screening import tasks  # noqa: F401
