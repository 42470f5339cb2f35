# Open Hypothesis: `make run` sets everything up and starts the app with demo data; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Every script under benchmarks/ but the code they share and the load test's locust file.
BENCHMARKS := $(sort $(filter-out benchmarks/support.py benchmarks/load_locustfile.py,$(wildcard benchmarks/*.py)))

.PHONY: run test lint install install-dev demo worker bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	@touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# The database, the default roster and the demo data, without starting anything (one process: migrations only when
# one is unapplied).
demo: install
	$(BIN)/python manage.py prepare_local

# The same and the static files (collected only when they changed), then the servers; the address and the demo
# logins are the last lines printed, once every server is up. HOST, PORT and SIMULATOR_PORT come from the settings
# (the environment or .env).
run: install
	$(BIN)/python manage.py prepare_local --static --no-logins
	./bin/run-local

# One more Celery worker on this machine, for the database and broker the settings name (see the README); it runs
# CELERY_CONCURRENCY threads.
worker: install
	$(BIN)/celery -A reviewapp worker --loglevel=INFO --pool threads

test: install-dev
	$(BIN)/python -m pytest

# Style, the rooms' import contracts (docs/architecture.md), migrations that models need, and type checks.
lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/mypy

# Every benchmark under benchmarks/ (most need DATABASE_URL=postgres://…; the load test needs locust, a development
# requirement; see benchmarks/README.md).
bench: install-dev
	@status=0; for script in $(BENCHMARKS); do \
		echo "== $$script"; $(BIN)/python $$script || status=1; \
	done; exit $$status

clean:
	rm -rf var
