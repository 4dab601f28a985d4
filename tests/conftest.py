"""Shared fixtures. One SparkSession for the whole pytest run (local[2], 2 shuffle partitions, no UI):
every Spark test asks for `spark`; starting a JVM per test would blow the CI budget."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# the server fixtures, registered once: a fixture imported into several test modules is a separate fixture in
# each, and a session-scoped one then starts one server per module (all kept until the session ends)
pytest_plugins = ["tests.servers.fixtures"]

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from etl.runtime.session import build_session

    s = build_session("etl-tests", "local[2]", {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "2g",
    }, ui=False)
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _no_secrets_from_other_tests():
    """etl's registry of values read from the environment is process-wide (a CLI process runs one pipeline): a
    test starts with it empty, so a value an earlier test read (a user name like `root`) is not redacted here."""
    from etl.load import secrets

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
