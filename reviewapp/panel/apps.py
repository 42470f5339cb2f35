from django.apps import AppConfig


class PanelConfig(AppConfig):
    name = "reviewapp.panel"
    label = "panel"
    verbose_name = "AI review panel"

    def ready(self):
        # Plugs the room into the rooms below it: its background jobs and its columns in the review exports.
        from reviewapp.panel import receivers  # noqa: F401
