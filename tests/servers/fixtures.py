"""Session-scoped pytest fixtures for the real test servers.

Registered once for the whole run by tests/conftest.py (``pytest_plugins``): test
modules ask for ``kafka_server`` etc. by name and never import them (an imported
fixture is a new fixture per module, and so a new server per module).

A fixture that cannot start its server FAILS the test with the server's log
tail (it never skips: a missing server in CI is a bug). Each fixture hands
out a started server; a test that stops it (``server.stop()``,
``server.outage(20)``, ``with server.down(): ...``) must leave it running
again (``server.ensure_running()``); the next tests share the same server.

Under xdist's loadgroup (``make test``), a worker gets all the tests of a server group (tests/conftest.py) in one
piece: when its next test is of another group, the servers it started are stopped (in the background, while the
next tests run) instead of idling until the worker ends; a later test marked ``servers`` in that worker (two server
groups in one worker) starts them again first, on the same ports with the same data.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from ._base import Server, ServerStartError
from .kafka import KafkaServer
from .kafka_sasl import KafkaSaslServer
from .mariadb import MariaDBServer, MariaDBTLSServer
from .opensearch import OpenSearchServer
from .rocketmq import RocketMQServer
from .spark_cluster import SparkCluster


class _Parking:
    """The session servers of this process (by fixture name), and those stopped after their group's last test."""

    def __init__(self) -> None:
        self.started: dict[str, Server] = {}
        self.parked: dict[str, Server] = {}
        self.stopping: threading.Thread | None = None

    def park(self) -> None:
        running = {f: s for f, s in self.started.items() if s.running}
        if not running:
            return
        self.wait()
        print(f"\n[servers] stopping {', '.join(s.name for s in running.values())}: their group's tests are done",
              file=sys.stderr)
        self.parked.update(running)
        self.stopping = threading.Thread(target=lambda: [s.stop() for s in running.values()], name="park-servers",
                                         daemon=True)
        self.stopping.start()

    def wait(self) -> None:
        if self.stopping is not None:
            self.stopping.join()
            self.stopping = None

    def unpark(self, item: pytest.Item) -> None:
        """The parked servers the test may use: its server fixtures, the one its `servers` mark names, or every one
        (a bare mark: it asks for them at run time)."""
        mark = item.get_closest_marker("servers")
        names = set(getattr(item, "fixturenames", ())) & SERVER_FIXTURES
        if mark is not None and mark.args:
            names.add(mark.args[0])
        elif mark is not None and not names:
            names = set(self.parked)
        self.wait()
        for name in sorted(names & set(self.parked)):
            server = self.parked.pop(name)
            try:
                server.start()
            except ServerStartError as exc:
                pytest.fail(f"could not start {server.name} again (work dir {server.workdir}):\n{exc}", pytrace=False)


_PARKING = _Parking()
SERVER_FIXTURES = frozenset({"kafka_server", "mariadb_server", "opensearch_server", "rocketmq_server",
                             "kafka_sasl_server", "mariadb_tls_server", "spark_cluster"})  # those defined below


def _group(item: pytest.Item | None) -> str | None:
    mark = item.get_closest_marker("xdist_group") if item is not None else None
    return str(mark.args[0]) if mark is not None and mark.args else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _PARKING.parked and item.get_closest_marker("servers") is not None:
        _PARKING.unpark(item)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last test of a server group in this worker (xdist runs a test once it knows the next one)."""
    config = item.config
    # an xdist worker under --dist loadgroup (xdist sets its option `loadgroup`, and `dist` to "no")
    if nextitem is None or not hasattr(config, "workerinput") or not getattr(config.option, "loadgroup", False):
        return
    if item.get_closest_marker("servers") is not None and _group(nextitem) != _group(item):
        _PARKING.park()


def _session_server(factory: Callable[[], Server], fixture: str) -> Iterator[Server]:
    server = factory()
    try:
        server.start()
    except ServerStartError as exc:
        # work dir kept for inspection
        pytest.fail(f"could not start {server.name} (work dir {server.workdir}):\n{exc}", pytrace=False)
    print(f"\n[servers] {server.name} ready in {server.startup_seconds:.1f}s: {server.info()}", file=sys.stderr)
    _PARKING.started[fixture] = server
    try:
        yield server
    finally:
        _PARKING.wait()
        server.cleanup(graceful=False)  # end of session: its data is thrown away, no clean shutdown to wait for


@pytest.fixture(scope="session")
def kafka_server() -> Iterator[KafkaServer]:
    """Started KafkaServer: ``.bootstrap_servers``."""
    yield from _session_server(KafkaServer, "kafka_server")


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer]:
    """Started MariaDBServer: ``.host .port .user .password .database .jdbc_url .connect()``."""
    yield from _session_server(MariaDBServer, "mariadb_server")


@pytest.fixture(scope="session")
def opensearch_server() -> Iterator[OpenSearchServer]:
    """Started OpenSearchServer: ``.url .request(method, path, body)``."""
    yield from _session_server(OpenSearchServer, "opensearch_server")


@pytest.fixture(scope="session")
def rocketmq_server() -> Iterator[RocketMQServer]:
    """Started RocketMQServer: ``.namesrv_addr .broker_addr``."""
    yield from _session_server(RocketMQServer, "rocketmq_server")


@pytest.fixture(scope="session")
def kafka_sasl_server() -> Iterator[KafkaSaslServer]:
    """Started KafkaSaslServer: ``.bootstrap_servers`` (PLAINTEXT), ``.sasl_bootstrap_servers``, ``.users``."""
    yield from _session_server(KafkaSaslServer, "kafka_sasl_server")


@pytest.fixture(scope="session")
def mariadb_tls_server() -> Iterator[MariaDBTLSServer]:
    """Started MariaDBTLSServer (TLS only): as ``mariadb_server`` plus ``.certs`` (``.certs.ca`` verifies it)."""
    yield from _session_server(MariaDBTLSServer, "mariadb_tls_server")


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkCluster]:
    """Started Spark standalone cluster (master + two one-core workers): ``.master_url``, ``.ui_url``."""
    yield from _session_server(SparkCluster, "spark_cluster")
