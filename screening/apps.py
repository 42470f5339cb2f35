from django.apps import AppConfig


class ScreeningConfig(AppConfig):
    name = "screening"
    verbose_name = "Screening"

    def ready(self):
        # Registers the pipeline's Celery tasks, which services send by name (reviewapp.core.queue), and the sweep of
        # runs and their work items.
        from reviewapp.core.claims import sweep_register
        from screening import tasks  # noqa: F401
        from screening.services.progress import screening_sweep

        sweep_register("screening runs", screening_sweep)
