# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
PYTHON ?= python3.11
VENV := $(ROOT)/.venv
BIN := $(VENV)/bin

export AIRFLOW_HOME := $(ROOT)/var/airflow
export AIRFLOW__CORE__DAGS_FOLDER := $(ROOT)/dags
export AIRFLOW__CORE__PLUGINS_FOLDER := $(ROOT)/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES := False
export AIRFLOW__CORE__UNIT_TEST_MODE := False
# a task's worker slot frees within 1 s of its end, not 5 (benchmarks/README.md, "Scale setting")
export AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL := 1
export AIRFLOW__WORKERS__MAX_FAILED_HEARTBEATS := 15
# no PYTHONPATH: the venv has the project installed (pyproject.toml: anonymizers,
# deid and the console script `anonymizers`); recipes that import benchmarks,
# tests or the development tools (tools/, not installed) run from $(ROOT)
export PATH := $(BIN):$(PATH)
export GX_ANALYTICS_ENABLED := False
TEST_DEBS := /usr/bin/chromium /usr/bin/redis-server

.PHONY: venv demo test airflow bench warehouse-stop clean

# The pinned requirements, then the project itself, editable and without
# dependencies, built offline by the pinned setuptools (which has bdist_wheel).
$(BIN)/activate: requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH (or make PYTHON=/path/to/python3.11)"; exit 1; }
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==25.3 setuptools==80.9.0
	$(BIN)/pip install --quiet -r $(ROOT)/requirements.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e $(ROOT)
	touch $(BIN)/activate

venv: $(BIN)/activate

$(AIRFLOW_HOME)/airflow.db: $(BIN)/activate
	mkdir -p $(AIRFLOW_HOME)
	$(BIN)/airflow db migrate >/dev/null

## make demo: embedded warehouse + demo claims + the MedCo DAG end to end + summary
## CODE_SYSTEM=icd10cm: demo claims in ICD-10-CM (default icd9cm)
CODE_SYSTEM ?= icd9cm
demo: $(AIRFLOW_HOME)/airflow.db
	cd $(ROOT) && $(BIN)/python -m tools.demo --code-system $(CODE_SYSTEM)

## make test: the whole test suite (unit, property, warehouse, DAG, browser)
test: $(TEST_DEBS) $(AIRFLOW_HOME)/airflow.db
	cd $(ROOT) && $(BIN)/python -m pytest -q -p no:cacheprovider tests

# Debian packages the tests need, each named as its program in /usr/bin: the
# browser test (tests/ui) drives chromium; the CeleryExecutor test
# (tests/integration/test_celery_executor.py) starts its own redis-server.
# As root, make installs them.
$(TEST_DEBS): /usr/bin/%:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's $* for the tests (apt-get update, install)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq $* >/dev/null || exit 1; \
	    test -x $@ || { echo "error: apt-get installed $* but there is no $@" >&2; exit 1; }; \
	else \
	    echo "error: the tests need Debian's $* at $@, and only root can install it:" >&2; \
	    echo "  sudo apt-get update && sudo apt-get install -y $*   (then make test again)" >&2; \
	    exit 1; \
	fi

## make airflow: Airflow UI with the project's DAGs and the warehouse
airflow: $(AIRFLOW_HOME)/airflow.db
	cd $(ROOT) && $(BIN)/python -m tools.standalone

## make bench: every benchmark, figures into benchmarks/RESULTS.md
bench: venv
	cd $(ROOT) && $(BIN)/python -m benchmarks.run_all

## make warehouse-stop: stop every embedded PostgreSQL under var/ (the demo's, the
## tests'), or exit non-zero saying why not (a live client, no permission)
warehouse-stop:
	@if [ -x $(BIN)/python ]; then \
	    $(BIN)/python -m deid.warehouse stop --under $(ROOT)/var; \
	elif [ -n "$$(find $(ROOT)/var -name postmaster.pid -print -quit 2>/dev/null)" ]; then \
	    echo "error: $(ROOT)/var holds a PostgreSQL pid file and $(BIN)/python is missing to stop it: make venv, then make warehouse-stop" >&2; \
	    exit 1; \
	fi

## make clean: delete var/, only once no embedded PostgreSQL runs on it
clean: warehouse-stop
	rm -rf $(ROOT)/var
