"""Session-scoped pytest fixtures for the real test servers.

Registered once for the whole run by tests/conftest.py (``pytest_plugins``): test
modules ask for ``kafka_server`` etc. by name and never import them (an imported
fixture is a new fixture per module, and so a new server per module).

A fixture that cannot start its server FAILS the test with the server's log
tail (it never skips: a missing server in CI is a bug). Each fixture hands
out a started server; a test that stops it (``server.stop()``,
``server.outage(20)``, ``with server.down(): ...``) must leave it running
again (``server.ensure_running()``); the next tests share the same server.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest

from ._base import Server, ServerStartError
from .kafka import KafkaServer
from .kafka_sasl import KafkaSaslServer
from .mariadb import MariaDBServer, MariaDBTLSServer
from .opensearch import OpenSearchServer
from .rocketmq import RocketMQServer
from .spark_cluster import SparkCluster


def _session_server(factory: Callable[[], Server]) -> Iterator[Server]:
    server = factory()
    try:
        server.start()
    except ServerStartError as exc:
        # work dir kept for inspection
        pytest.fail(f"could not start {server.name} (work dir {server.workdir}):\n{exc}", pytrace=False)
    print(f"\n[servers] {server.name} ready in {server.startup_seconds:.1f}s: {server.info()}", file=sys.stderr)
    try:
        yield server
    finally:
        server.cleanup(graceful=False)  # end of session: its data is thrown away, no clean shutdown to wait for


@pytest.fixture(scope="session")
def kafka_server() -> Iterator[KafkaServer]:
    """Started KafkaServer: ``.bootstrap_servers``."""
    yield from _session_server(KafkaServer)


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer]:
    """Started MariaDBServer: ``.host .port .user .password .database .jdbc_url .connect()``."""
    yield from _session_server(MariaDBServer)


@pytest.fixture(scope="session")
def opensearch_server() -> Iterator[OpenSearchServer]:
    """Started OpenSearchServer: ``.url .request(method, path, body)``."""
    yield from _session_server(OpenSearchServer)


@pytest.fixture(scope="session")
def rocketmq_server() -> Iterator[RocketMQServer]:
    """Started RocketMQServer: ``.namesrv_addr .broker_addr``."""
    yield from _session_server(RocketMQServer)


@pytest.fixture(scope="session")
def kafka_sasl_server() -> Iterator[KafkaSaslServer]:
    """Started KafkaSaslServer: ``.bootstrap_servers`` (PLAINTEXT), ``.sasl_bootstrap_servers``, ``.users``."""
    yield from _session_server(KafkaSaslServer)


@pytest.fixture(scope="session")
def mariadb_tls_server() -> Iterator[MariaDBTLSServer]:
    """Started MariaDBTLSServer (TLS only): as ``mariadb_server`` plus ``.certs`` (``.certs.ca`` verifies it)."""
    yield from _session_server(MariaDBTLSServer)


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkCluster]:
    """Started Spark standalone cluster (master + two one-core workers): ``.master_url``, ``.ui_url``."""
    yield from _session_server(SparkCluster)
