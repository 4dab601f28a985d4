# Two commands a newcomer needs:  `make run` (main job on the embedded default)  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
ETL    := $(VENV)/bin/etl
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: setup run test test-fast validate schema bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

run: setup
	$(ETL) run pipelines/quickstart.yaml --once

test: setup
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not spark and not servers and not slow"

validate: setup
	$(ETL) validate pipelines

schema: setup
	$(ETL) schema

clean:
	rm -rf .etl .pytest_cache .hypothesis
