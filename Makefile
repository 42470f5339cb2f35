# Open Hypothesis: `make run` sets everything up and starts the app with demo data; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Every benchmark under benchmarks/: the *_speed.py scripts and the load test (the rest is code they share).
BENCHMARKS := $(sort $(wildcard benchmarks/*_speed.py) benchmarks/load_test.py)

.PHONY: run dev logs test lint install install-dev demo worker bench clean

# Where the benchmarks of one `make bench` append their figures, printed as one table at its end.
bench: export OH_BENCH_ROWS := $(CURDIR)/var/bench-rows-$(shell date +%Y%m%d%H%M%S)-$(shell echo $$PPID).jsonl

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

# The same and the static files (collected only when they changed), then the servers (the web server is gunicorn);
# the log files, the address and the demo logins are the last lines printed, once every server is up, and the
# servers' logs go to var/logs/ (only warnings and errors to the terminal). HOST, PORT and SIMULATOR_PORT come from
# the settings (the environment or .env).
run: install
	$(BIN)/python manage.py prepare_local --static --no-logins
	./bin/run-local

# The same with Django's development server, which reloads on code changes, and every server's log on the terminal.
dev: install
	$(BIN)/python manage.py prepare_local --static --no-logins
	./bin/run-local --dev

# Follow the logs of the servers `make run` started (the last lines of each, then what they write).
logs: install
	@logs="$$($(BIN)/python manage.py show_settings VAR_DIR)/logs"; \
	if ls "$$logs"/*.log >/dev/null 2>&1; then tail -n 20 -F "$$logs"/*.log; \
	else echo "No logs in $$logs yet: \`make run\` writes them."; exit 1; fi

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
	done; $(BIN)/python benchmarks/summary.py; exit $$status

clean:
	rm -rf var
