"""Writes of the screening app: runs and their limits, the protocol's steps, cohorts from run results."""
