from django.apps import AppConfig


class LiteratureConfig(AppConfig):
    name = "literature"
    verbose_name = "Literature"

    def ready(self):
        # Registers the literature tasks (services send them by name) and the check of a run's literature step with
        # the screening pipeline (screening.hooks).
        from literature import receivers  # noqa: F401
