"""Screening records: Open Hypothesis runs, their hypotheses and forecasts (runs.py).

The model-calling layer keeps its own records (endpoints, rosters, calls) in screening.llm.models; they belong to this
app, and importing them here is what registers them with it.
"""

from screening.llm import models as llm_models  # noqa: F401
from screening.models.runs import *  # noqa: F403
