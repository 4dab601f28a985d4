"""tests/servers/fixtures.py: under xdist's loadgroup, the session servers a worker started are stopped after the
last test of their group (the next test is of another group) and started again before a later `servers` test."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.servers import fixtures


class FakeServer:
    name, workdir = "fake", "/nonexistent"

    def __init__(self) -> None:
        self.running, self.calls = True, []

    def start(self) -> None:
        self.running = True
        self.calls.append("start")

    def stop(self) -> None:
        self.running = False
        self.calls.append("stop")


def item(config, group: str | None, servers: tuple | None = (), fixtures_: tuple = ()):
    """A test as the hooks see it: its config, its xdist group, its `servers` mark (None: none; its args) and the
    fixtures it asks for."""
    marks = {"xdist_group": pytest.mark.xdist_group(group).mark if group else None,
             "servers": pytest.mark.servers(*servers).mark if servers is not None else None}
    return SimpleNamespace(config=config, get_closest_marker=marks.get, fixturenames=list(fixtures_))


@pytest.fixture
def parking(monkeypatch):
    p = fixtures._Parking()
    monkeypatch.setattr(fixtures, "_PARKING", p)
    return p


# an xdist worker under --dist loadgroup, as xdist leaves its options
WORKER = SimpleNamespace(workerinput={"workerid": "gw0"}, option=SimpleNamespace(dist="no", loadgroup=True))


def test_a_group_s_servers_stop_after_its_last_test_and_start_again_for_a_later_test_using_them(parking):
    kafka, mariadb, cluster = FakeServer(), FakeServer(), FakeServer()
    parking.started.update(kafka_server=kafka, mariadb_server=mariadb, spark_cluster=cluster)
    cluster.running = False  # stopped by its test (an outage it had not ended): nothing to stop
    a, b = item(WORKER, "kafka", fixtures_=("kafka_server",)), item(WORKER, "kafka", fixtures_=("mariadb_server",))
    spark_only, module = item(WORKER, None, servers=None), item(WORKER, "module:tests/x.py", servers=None)
    fixtures.pytest_runtest_teardown(a, b)  # the same group next
    assert parking.parked == {} and kafka.calls == mariadb.calls == []
    fixtures.pytest_runtest_teardown(b, spark_only)
    parking.wait()
    assert parking.parked == {"kafka_server": kafka, "mariadb_server": mariadb}
    assert kafka.calls == mariadb.calls == ["stop"] and cluster.calls == []
    fixtures.pytest_runtest_setup(spark_only)
    fixtures.pytest_runtest_teardown(spark_only, module)  # no servers test: nothing to stop
    fixtures.pytest_runtest_setup(module)
    assert kafka.calls == mariadb.calls == ["stop"]
    # another server group in this worker: only what its test uses comes back (a fixture, or the mark's name)
    fixtures.pytest_runtest_setup(item(WORKER, "rocketmq", fixtures_=("rocketmq_server", "mariadb_server")))
    assert parking.parked == {"kafka_server": kafka} and mariadb.calls == ["stop", "start"] and mariadb.running
    fixtures.pytest_runtest_setup(item(WORKER, "cluster", fixtures_=("spark", "spark_cluster")))  # not parked
    assert parking.parked == {"kafka_server": kafka} and kafka.calls == ["stop"]
    fixtures.pytest_runtest_setup(item(WORKER, "rocketmq", servers=("kafka_server",)))
    assert parking.parked == {} and kafka.calls == ["stop", "start"] and kafka.running


def test_the_parking_knows_every_server_fixture():
    import inspect
    import re

    source = inspect.getsource(fixtures)
    defined = re.findall(r'def (\w+)\(\) -> Iterator\[\w+\]:\n    """[^"]*"""\n    yield from _session_server\(\w+, "(\w+)"\)',
                         source)
    assert len(defined) == source.count("yield from _session_server(") == 7
    assert all(fn == name for fn, name in defined) and {fn for fn, _ in defined} == fixtures.SERVER_FIXTURES


def test_a_bare_servers_mark_brings_every_parked_server_back(parking):
    kafka, mariadb = FakeServer(), FakeServer()
    parking.started.update(kafka_server=kafka, mariadb_server=mariadb)
    fixtures.pytest_runtest_teardown(item(WORKER, "kafka"), item(WORKER, None, servers=None))
    fixtures.pytest_runtest_setup(item(WORKER, "rocketmq"))  # asks for its servers at run time
    assert parking.parked == {} and kafka.calls == mariadb.calls == ["stop", "start"]


@pytest.mark.parametrize("config", [SimpleNamespace(option=SimpleNamespace(dist="no")),  # one process: file order
                                    SimpleNamespace(workerinput={}, option=SimpleNamespace(dist="no", loadgroup=False))])
def test_servers_keep_running_outside_xdist_s_loadgroup(parking, config):
    kafka = FakeServer()
    parking.started["kafka_server"] = kafka
    fixtures.pytest_runtest_teardown(item(config, "kafka"), item(config, None, servers=None))
    fixtures.pytest_runtest_teardown(item(WORKER, "kafka"), None)  # the worker's last test: the session ends
    assert parking.parked == {} and kafka.calls == []
