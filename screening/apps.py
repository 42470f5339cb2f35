from django.apps import AppConfig


class ScreeningConfig(AppConfig):
    name = "screening"
    verbose_name = "Screening"
