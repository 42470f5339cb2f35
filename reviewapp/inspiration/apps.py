from django.apps import AppConfig


class InspirationConfig(AppConfig):
    name = "reviewapp.inspiration"
    label = "inspiration"
    verbose_name = "Inspiration audit"

    def ready(self):
        # Registers the audit's tasks (services send them by name) and its reader of reference uses with the
        # literature room (literature.hooks).
        from reviewapp.inspiration import receivers  # noqa: F401
