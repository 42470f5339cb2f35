"""The demonstration data that `make run` loads (docs/architecture.md, the project room): the demo accounts, cohort
and reviews (`cohort`), the automated work queued for the worker (`work`) and the start-up banner with the demo
logins (`banner`). An app of its own, so that the worker hears when the demo benchmark set's runs are pooled."""
