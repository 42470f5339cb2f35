"""Screening records: model endpoints and calls (endpoints.py), Open Hypothesis runs (runs.py)."""

from screening.models.endpoints import *  # noqa: F403
from screening.models.runs import *  # noqa: F403
