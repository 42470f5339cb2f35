from django.apps import AppConfig


class PanelConfig(AppConfig):
    name = "reviewapp.panel"
    label = "panel"
    verbose_name = "AI review panel"
