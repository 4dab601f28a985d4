"""Shared fixtures. One SparkSession for the whole pytest run (local[2], 2 shuffle partitions, no UI):
every Spark test asks for `spark`; starting a JVM per test would blow the CI budget."""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

import pytest

# the server fixtures, registered once: a fixture imported into several test modules is a separate fixture in
# each, and a session-scoped one then starts one server per module (all kept until the session ends)
pytest_plugins = ["tests.servers.fixtures", "tests.scheduling"]

ROOT = Path(__file__).resolve().parent.parent
# the `etl run` processes the tests start (hundreds, most for seconds) grow their heap as needed instead of
# touching all of it at start (etl.settings ETL_JVM_PRETOUCH): less memory beside the servers, a faster start
os.environ.setdefault("ETL_JVM_PRETOUCH", "off")
# ... and compile with the JVM's quick compiler only (ETL_JVM_QUICK_JIT), the run's own session too: most of a
# short run's CPU is C2 compiling Spark's code (tests/sql in one process: 112.6 CPU-s with C2, 80.3 without)
os.environ.setdefault("ETL_JVM_QUICK_JIT", "on")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SPARK_FIXTURES = {"spark"}  # the fixtures that start a session (and, through pytest, every fixture using them)
_IMPORTS_PYSPARK = re.compile(r"^(?:from|import) pyspark\b", re.M)


@functools.cache
def _imports_pyspark(path: Path) -> bool:
    try:
        return path.suffix == ".py" and _IMPORTS_PYSPARK.search(path.read_text()) is not None
    except OSError:
        return False


def _starts_spark(item: pytest.Item) -> bool:
    """A test that asks for a session, or lives in a module importing pyspark at its top."""
    if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    path = getattr(item, "path", None)
    return path is not None and _imports_pyspark(path)


# Under pytest-xdist (`make test` runs `-n 3 --dist loadgroup`), the tests using session-scoped servers run in one
# of two xdist groups, each pinned to one worker: a server starts once per worker that runs one of its tests and
# then idles until that worker ends (RocketMQ 2.3 CPU-s a minute, Kafka 0.8, OpenSearch 0.4; starting: 3.5-7 s).
# The two groups follow the families tests use together: Kafka with MySQL (and SASL Kafka, TLS MariaDB, the
# examples' OpenSearch); RocketMQ with OpenSearch (and the scripts' MySQL), with the tests a bare `servers` mark
# puts there (every family at once: the concurrent outage scenario). With a group per family (and one for that
# scenario), a third worker could start RocketMQ, OpenSearch and MariaDB again. Each group (380 and 345 s in
# tests/durations.json) is under half a worker's share of the suite, so xdist still balances the workers. A test
# using two families goes with the first listed here. The tests sharing a module-scoped fixture are a group too
# (one per module), so that the fixture runs once.
XDIST_GROUPS = {
    "spark_cluster": "cluster",
    "kafka_server": "kafka", "kafka_sasl_server": "kafka",
    "rocketmq_server": "rocketmq", "opensearch_server": "rocketmq",
    "mariadb_server": "kafka", "mariadb_tls_server": "kafka",
}
EVERY_FAMILY = "rocketmq"  # the group of a bare `servers` mark


def _module_fixture(item) -> str | None:
    """The module of a module-scoped fixture the test uses (e.g. one streaming query whose output several tests
    assert on), if any: pytest computes it once per worker that runs one of its tests, so spread over two workers
    it runs twice (tests/windows/test_late_update.py's query: 25 CPU-s each time)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope == "module":
            return item.nodeid.split("::", 1)[0]
    return None


def _xdist_group(item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    group = next((g for f, g in XDIST_GROUPS.items() if f in names), None)
    marker = item.get_closest_marker("servers")
    if group is None and marker is not None:
        # asks for its server at run time (request.getfixturevalue): `servers("kafka_server")` names it, a bare
        # `servers` mark (every family, e.g. the concurrent outage scenario) goes with the RocketMQ group
        group = XDIST_GROUPS.get(marker.args[0], EVERY_FAMILY) if marker.args else EVERY_FAMILY
    if group is None:
        module = _module_fixture(item)
        group = f"module:{module}" if module else None
    return group


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Every test that starts Spark is marked `spark` (whether or not it says so), so `-m "not spark"` skips it;
    a test using a session server is put in that server family's xdist group."""
    for item in items:
        if item.get_closest_marker("spark") is None and _starts_spark(item):
            item.add_marker(pytest.mark.spark)
        group = _xdist_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session):
    """Before the first test starts a JVM, the driver JVMs' class archive is made (etl.runtime.class_archive):
    each of the suite's JVM starts (the shared sessions, every `etl run` a test starts) then takes about half
    the CPU. Workers take turns: one makes it, the others find it made."""
    if os.environ.get("ETL_NO_SPARK", "").strip().lower() in ("on", "1", "true", "yes"):
        return
    if any(item.get_closest_marker("spark") for item in session.items):
        from etl.runtime import class_archive

        class_archive.build()


def pytest_configure(config):
    """Under ETL_NO_SPARK=on (`make test-fast`), no JVM starts in this process: build_session refuses
    (etl.settings), and so does pyspark's own launcher, for a test that would start one some other way."""
    if os.environ.get("ETL_NO_SPARK", "").strip().lower() in ("on", "1", "true", "yes"):
        import pyspark.java_gateway as gateway

        def refuse(*args, **kwargs):
            raise RuntimeError("ETL_NO_SPARK is on: this test starts a JVM; mark it `spark` (tests/conftest.py)")

        gateway.launch_gateway = refuse
        import pyspark.context

        pyspark.context.launch_gateway = refuse


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from etl import settings
    from etl.runtime.session import build_session

    # this session lives as long as the test run: its heap is touched at start, as in a user's run
    pretouch = os.environ.get("ETL_JVM_PRETOUCH")
    os.environ["ETL_JVM_PRETOUCH"] = "on"
    settings.reset()
    s = build_session("etl-tests", "local[2]", {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "2g",
    }, ui=False)
    if pretouch is None:
        os.environ.pop("ETL_JVM_PRETOUCH")
    else:
        os.environ["ETL_JVM_PRETOUCH"] = pretouch
    settings.reset()
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _no_secrets_from_other_tests():
    """etl's registry of values read from the environment is process-wide (a CLI process runs one pipeline): a
    test starts with it empty, so a value an earlier test read (a user name like `root`) is not redacted here."""
    from etl import secrets

    secrets.clear()
    yield


@pytest.fixture(autouse=True)
def _settings_read_in_each_test():
    """etl.settings reads the environment once per process: each test reads it again (after its own setenv);
    a test that changes it again midway calls etl.settings.reset()."""
    from etl import settings

    settings.reset()
    yield
    settings.reset()
