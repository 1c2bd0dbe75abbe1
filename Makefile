# Refund Desk: `make run` serves the desk with a worker; `make test` runs lint and the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-pg lint venv migrate seed worker web clean

$(VENV)/.installed: pyproject.toml
	@echo "Installing Refund Desk and its dependencies into $(VENV)/ (first run, or after" \
		"pyproject.toml changed; 1-3 minutes)..."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install ".[test,lint]"
	@touch $@
	@echo "Installed into $(VENV)/."

venv: $(VENV)/.installed

# SQLite makes var/ on its first connection, the filesystem broker its folders on its first
# use (config/sqlite/base.py, ops/broker.py).
migrate: venv
	$(PY) manage.py migrate --noinput

seed: migrate
	$(PY) manage.py seed_demo

# DEBUG on for the developer (DJANGO_DEBUG=true unless set): ops/devserver.py.
run: seed
	@$(PY) -m ops.devserver --host $(HOST) --port $(PORT)

web: migrate
	$(PY) manage.py runserver $(HOST):$(PORT)

worker: migrate
	$(VENV)/bin/celery -A config worker -B --loglevel=INFO --concurrency=2

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) manage.py makemigrations --check --dry-run

# The suite under coverage ([tool.coverage] in pyproject.toml; about 1.4 times as long). After
# pytest's summary: the ten least covered files and the total; every file below 100 % in
# var/coverage/report.txt. Workers the tests start as processes are not measured.
test: lint
	@mkdir -p var/coverage
	$(VENV)/bin/coverage run -m pytest $(PYTEST_ARGS)
	@$(VENV)/bin/coverage report > var/coverage/report.txt
	@echo "Coverage of the apps, the least covered files first (all: var/coverage/report.txt):"
	@sed -n '1p;3,12p' var/coverage/report.txt
	@grep -e '^TOTAL' -e 'skipped due to complete coverage' var/coverage/report.txt

# The claims only PostgreSQL can test (real threads racing on row locks, a dropped connection)
# together with the suites around them (refunds, runs, policies), against the server in
# DATABASE_URL; its tests run in a database named test_<name>. Starts nothing: the server must
# be up. REQUIRE_SERVICES=1 makes a PostgreSQL test fail rather than skip.
PG_DATABASE_URL := $(or $(DATABASE_URL),postgres://postgres@127.0.0.1:5432/refund_desk)
PG_TESTS ?= tests/test_services_present.py::test_postgres_is_the_database tests/refunds \
	tests/agent tests/policies tests/faults/test_database_dropped.py

test-pg: venv
	DATABASE_URL=$(PG_DATABASE_URL) REQUIRE_SERVICES=1 $(VENV)/bin/pytest $(PG_TESTS) $(PYTEST_ARGS)

clean:
	rm -rf var/db.sqlite3* var/test_db.sqlite3* var/broker var/celerybeat-schedule* var/cache var/metrics var/coverage
