from django.apps import AppConfig


class InspirationConfig(AppConfig):
    name = "reviewapp.inspiration"
    label = "inspiration"
    verbose_name = "Inspiration audit"
