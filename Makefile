# Two commands a newcomer needs:  `make run` (main job on the embedded default)  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
ETL    := $(VENV)/bin/etl
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: setup setup-java setup-servers run test test-fast validate schema bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[connectors,test]'
	touch $@

# Java artifacts (Spark Kafka connector, JDBC driver, Kafka/RocketMQ/OpenSearch servers) via Maven
setup-java: setup
	PYTHON=$(PY) scripts/setup-java.sh

# MariaDB server (Debian package) for the integration tests
setup-servers: setup
	PYTHON=$(PY) scripts/setup-servers.sh

run: setup
	$(ETL) run pipelines/quickstart.yaml --once

test: setup setup-java setup-servers
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not spark and not servers and not slow"

validate: setup
	$(ETL) validate pipelines

schema: setup
	$(ETL) schema

clean:
	rm -rf .etl .pytest_cache .hypothesis
