# Refund Desk: `make run` serves the desk with a worker; `make test` runs lint and the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint venv migrate seed worker web clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet ".[test,lint]"
	touch $@

venv: $(VENV)/.installed

var:
	mkdir -p var/broker/out var/broker/processed

migrate: venv var
	$(PY) manage.py migrate --noinput

seed: migrate
	$(PY) manage.py seed_demo

run: seed
	@$(PY) -m config.devserver --host $(HOST) --port $(PORT)

web: migrate
	$(PY) manage.py runserver $(HOST):$(PORT)

worker: migrate
	$(VENV)/bin/celery -A config worker -B --loglevel=INFO --concurrency=2

lint: venv
	$(VENV)/bin/ruff check .
	$(PY) manage.py makemigrations --check --dry-run

test: lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

clean:
	rm -rf var/db.sqlite3* var/test_db.sqlite3* var/broker var/celerybeat-schedule*
