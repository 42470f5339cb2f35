"""Open Hypothesis runs, their hypotheses and forecasts."""
