"""Open Hypothesis runs, their hypotheses and forecasts."""

from django.db import models

__all__ = ["Run"]


class Run(models.Model):
    """One Open Hypothesis run (generation or the client's own hypotheses → two-stage forecast → literature)."""

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"run {self.pk}"
