"""The public Open Hypothesis REST API (/api/v1/open-hypothesis/)."""
