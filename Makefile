# Open Hypothesis: `make run` sets everything up and starts the app with demo data; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: run test lint install install-dev demo worker clean

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

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py setup_roster
	$(BIN)/python manage.py load_demo
	PORT=$(PORT) ./bin/run-local

test: install-dev
	$(BIN)/python -m pytest

lint: install-dev
	$(BIN)/ruff check .

clean:
	rm -rf var

.PHONY: bench
# Speed against the targets for blinded review (needs DATABASE_URL=postgres://…; see benchmarks/README.md).
bench: install
	$(BIN)/python benchmarks/review_speed.py
