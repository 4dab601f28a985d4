# Two commands a newcomer needs:  `make run` (main job on the embedded default)  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
ETL    := $(VENV)/bin/etl
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: setup setup-java jar setup-servers run test test-fast lint typecheck check durations goldens validate schema docs docs-site bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[connectors,test,dev]'
	touch $@

# Java artifacts (Spark Kafka connector, JDBC driver, Kafka/RocketMQ/OpenSearch servers) via Maven, and etl's jar
setup-java: setup jar
	PYTHON=$(PY) scripts/setup-java.sh
	# the driver JVM's class archive (etl.runtime.class_archive): every later JVM start takes about half the CPU
	-$(PY) -m etl.runtime.class_archive

# etl's jar: java/etl-jvm (Maven) compiles etl/jvm/*.java against the venv's pyspark jars, runs its JUnit tests and
# packages target/etl-jvm.jar, copied to etl/jvm/etl-jvm.jar where the wheel takes it and runs find it
# (etl.physical.jar); rebuilt when a source, a JUnit test or a pom changed
JAR     := etl/jvm/etl-jvm.jar
PYSPARK  = $(shell $(PY) -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__), pyspark.__version__)')
jar: $(JAR)

$(JAR): $(VENV)/.installed $(wildcard etl/jvm/*.java) $(shell find java/etl-jvm/src -type f 2>/dev/null) java/pom.xml java/etl-jvm/pom.xml
	mvn -B -q -Dstyle.color=never -s java/settings.xml -f java/pom.xml verify \
	    -Dpyspark.jars=$(word 1,$(PYSPARK))/jars -Dpyspark.version=$(word 2,$(PYSPARK))
	cp java/etl-jvm/target/etl-jvm.jar $@

# MariaDB server (Debian package) for the integration tests
setup-servers: setup
	PYTHON=$(PY) scripts/setup-servers.sh

# pytest-xdist workers of `make test` and `make test-fast` (tests/conftest.py keeps each family of test servers in
# one worker; tests/scheduling.py hands out the longest work first); 1 runs the tests in this process
WORKERS ?= 3
XDIST   := $(if $(filter 1,$(WORKERS)),,-n $(WORKERS) --dist loadgroup --no-loadscope-reorder)

run: setup
	$(ETL) run pipelines/quickstart.yaml --once

# the whole suite, each test once: the fast tests first (they start no JVM, so a broken change fails in about a
# minute), then every other test (the complement of test-fast's marks), printing the 30 slowest (the budget: 15
# minutes for the whole suite)
test: setup setup-java setup-servers test-fast
	$(PY) -m pytest -q $(XDIST) -m "spark or servers or slow" --durations=30

# ETL_NO_SPARK: starting Spark fails (a test that does must be marked `spark`): the fast suite starts no JVM
test-fast: setup
	ETL_NO_SPARK=on $(PY) -m pytest -q $(XDIST) -m "not spark and not servers and not slow"

# ruff (rules in pyproject.toml) and the import contracts (pyspark only in compile/runtime/connectors)
lint: setup
	$(VENV)/bin/ruff check etl tests bench scripts
	$(VENV)/bin/lint-imports

# mypy on all of etl/ (pyproject.toml's [tool.mypy])
typecheck: setup
	$(VENV)/bin/mypy

check: lint typecheck test-fast

# the whole suite, writing each test's seconds to tests/durations.json (the order tests/scheduling.py hands out)
durations: setup setup-java setup-servers
	ETL_NO_SPARK=on $(PY) -m pytest -q $(XDIST) -m "not spark and not servers and not slow" --store-durations
	$(PY) -m pytest -q $(XDIST) -m "spark or servers or slow" --store-durations

# rewrite every golden file (explain texts) from the current output; review the diff before committing
goldens: setup
	ETL_UPDATE_GOLDEN=1 $(PY) -m pytest -q tests/golden tests/optimize

validate: setup
	$(ETL) validate pipelines

schema: setup
	$(ETL) schema

# the reference pages under docs/reference/ (components, error codes, settings, metrics, SQL functions), written
# from the code by `etl docs` (tests/unit/test_docs.py fails when they are stale)
docs: setup
	$(ETL) docs

# the docs site (mkdocs.yml, docs/) into site/, every warning an error (a broken link, a page left out of the nav);
# CI builds it after lint, checking first that the generated pages are current
docs-site: setup
	$(ETL) docs --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir site

# the benchmarks that need no Spark and no server (the others: bench/*.py, each prints its usage)
bench: setup
	$(PY) bench/validate.py
	$(PY) bench/validate_sql.py
	$(PY) bench/filter_core.py --rules 1000 --events 100000

clean:
	rm -rf .etl .pytest_cache .hypothesis
