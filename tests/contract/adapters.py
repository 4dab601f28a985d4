"""Contract adapters: how the contract suite writes to, and reads back from, one connector.

Adding a connector to the suite is one small class registered with `@adapter`:

    @adapter
    class MyAdapter(Adapter):
        name = "mine"                      # the sink type
        fixture = "mine_server"            # session fixture of tests/servers (None: no server)
        def sink(self, t): return {"type": "mine", "address": t.server.addr, "topic": t.name}
        def bad_address(self, t): return {"type": "mine", "address": "127.0.0.1:1", "topic": t.name}
        def read_back(self, t): return [...every stored row as a dict, duplicates included...]

Optionally `source(t)` (the connector read back through its own etl source).
A connector whose module is missing is not registered (e.g. rocketmq until
its connector lands), so the parametrization always lists what exists.
"""

from __future__ import annotations

import importlib.util
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

ADAPTERS: dict[str, Adapter] = {}


def adapter(cls: type[Adapter]) -> type[Adapter]:
    inst = cls()
    if inst.available():
        ADAPTERS[inst.name] = inst
    return cls


@dataclass
class Target:
    """One test's resource on a connector: a unique topic/table/index/folder name."""

    name: str
    server: Any
    tmp: Path
    extra: dict = field(default_factory=dict)


class Adapter:
    name: ClassVar[str] = ""
    fixture: ClassVar[str | None] = None  # pytest fixture giving the server
    module: ClassVar[str | None] = None  # sink module that must exist for the adapter to register
    bad_address_error: ClassVar[str] = "cannot"  # text the bad-address failure must contain
    bad_credentials: ClassVar[bool] = False  # the connector has credentials to get wrong
    # the client rides out a short outage itself (librdkafka: the transaction waits for the broker), so the sink
    # may log no retry of its own during one
    waits_out_outages: ClassVar[bool] = False

    def available(self) -> bool:
        return self.module is None or importlib.util.find_spec(self.module) is not None

    def target(self, server: Any, tmp: Path) -> Target:
        return Target(f"c_{self.name}_{uuid.uuid4().hex[:10]}", server, tmp)

    def sink(self, t: Target) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def bad_address(self, t: Target) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def bad_credentials_sink(self, t: Target) -> dict:  # pragma: no cover - only when bad_credentials
        raise NotImplementedError

    def source(self, t: Target) -> dict | None:
        """The connector as an etl source reading what the sink wrote (None: no source)."""
        return None

    def has_source(self) -> bool:
        return type(self).source is not Adapter.source

    def read_back(self, t: Target, expected: int) -> list[dict]:  # pragma: no cover - abstract
        raise NotImplementedError

    def crash(self, sink: Any) -> None:
        """Simulate the process dying in the middle of a batch (default: the sink is just abandoned)."""


def canonical(row: dict) -> tuple:
    """(id, name, amount) of a contract row, whatever the store did to types."""
    return (int(row["id"]), str(row["name"]), round(float(row["amount"]), 6))


# ------------------------------------------------------------------ file
@adapter
class FileAdapter(Adapter):
    name = "file"
    bad_address_error = "cannot create"

    def sink(self, t: Target) -> dict:
        return {"type": "file", "path": str(t.tmp / t.name), "format": "jsonl"}

    def bad_address(self, t: Target) -> dict:
        return {"type": "file", "path": "/proc/etl-contract/not-writable", "format": "jsonl"}

    def source(self, t: Target) -> dict:
        return {"type": "file", "path": str(t.tmp / t.name), "format": "jsonl",
                "schema": {"id": "bigint", "name": "string", "amount": "double", "ts": "timestamp"}}

    def read_back(self, t: Target, expected: int) -> list[dict]:
        rows = []
        for f in sorted((t.tmp / t.name).glob("part-*.jsonl")):
            rows.extend(json.loads(line) for line in f.read_text().splitlines() if line)
        return rows


# ----------------------------------------------------------------- kafka
def consume_all(bootstrap: str, topic: str, expected: int, idle: float = 2.0, timeout: float = 90.0) -> list[Any]:
    """Every committed message of `topic` (read_committed), until `expected` came and `idle` s passed quietly."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"contract-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msgs = c.consume(10000, 0.5)
            real = [m for m in msgs if m.error() is None]
            got.extend(real)
            if real:
                quiet_since = time.monotonic()
            elif len(got) >= expected and time.monotonic() - quiet_since >= idle:
                break
    finally:
        c.close()
    return got


@adapter
class KafkaAdapter(Adapter):
    name = "kafka"
    fixture = "kafka_server"
    waits_out_outages = True
    module = "etl.components.sinks.kafka.build"
    bad_address_error = "cannot reach Kafka"

    def target(self, server: Any, tmp: Path) -> Target:
        t = super().target(server, tmp)
        server.create_topic(t.name, partitions=2)
        return t

    def sink(self, t: Target) -> dict:
        return {"type": "kafka", "bootstrap_servers": t.server.bootstrap_servers, "topic": t.name,
                "key": "cast(id AS string)", "headers": {"origin": "'contract'"}}

    def bad_address(self, t: Target) -> dict:
        return {"type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topic": t.name}

    def source(self, t: Target) -> dict:
        return {"type": "kafka", "bootstrap_servers": t.server.bootstrap_servers, "topics": [t.name],
                "schema": {"id": "bigint", "name": "string", "amount": "double", "ts": "timestamp"}}

    def read_back(self, t: Target, expected: int) -> list[dict]:
        msgs = consume_all(t.server.bootstrap_servers, t.name, expected)
        rows = []
        for m in msgs:
            row = json.loads(m.value())
            assert m.key() == str(row["id"]).encode(), (m.key(), row)
            assert dict(m.headers() or []) == {"origin": b"contract"}
            rows.append(row)
        return rows


# ----------------------------------------------------------------- mysql
@adapter
class MySQLAdapter(Adapter):
    name = "mysql"
    fixture = "mariadb_server"
    module = "etl.components.sinks.mysql.build"
    bad_address_error = "cannot connect"
    bad_credentials = True

    def _base(self, t: Target) -> dict:
        s = t.server
        return {"type": "mysql", "host": s.host, "port": s.port, "user": s.user, "password": s.password,
                "database": s.database, "table": t.name}

    def sink(self, t: Target) -> dict:
        # insert mode and no key: a doubled batch would show as doubled rows
        return {**self._base(t), "mode": "insert", "create_table": True, "batch_size": 40}

    def bad_address(self, t: Target) -> dict:
        return {**self.sink(t), "port": 1}

    def bad_credentials_sink(self, t: Target) -> dict:
        return {**self.sink(t), "password": "wrong-password"}

    def crash(self, sink: Any) -> None:
        if sink.conn is not None:
            sink.conn.close()  # the server rolls the open transaction back, as when the process dies

    def read_back(self, t: Target, expected: int) -> list[dict]:
        import pymysql

        conn = t.server.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT id, name, amount FROM `{t.name}`")
                return [{"id": r[0], "name": r[1], "amount": r[2]} for r in cur.fetchall()]
        except pymysql.err.ProgrammingError as e:
            if e.args[0] == 1146:  # not created yet
                return []
            raise
        finally:
            conn.close()


# --------------------------------------------------------- elasticsearch
@adapter
class ElasticsearchAdapter(Adapter):
    name = "elasticsearch"
    fixture = "opensearch_server"
    module = "etl.components.sinks.elasticsearch.build"
    bad_address_error = "cannot reach"

    def sink(self, t: Target) -> dict:
        return {"type": "elasticsearch", "hosts": [t.server.url], "index": t.name, "id_fields": ["id"],
                "batch_size": 40}

    def bad_address(self, t: Target) -> dict:
        return {**self.sink(t), "hosts": ["http://127.0.0.1:1"]}

    def read_back(self, t: Target, expected: int) -> list[dict]:
        if t.server.request("GET", f"/_cat/indices/{t.name}*?format=json") == []:
            return []  # not created yet
        t.server.request("POST", f"/{t.name}/_refresh")
        res = t.server.request("POST", f"/{t.name}/_search", {"size": 10000, "query": {"match_all": {}}})
        return [h["_source"] for h in res["hits"]["hits"]]


# -------------------------------------------------------------- rocketmq
@adapter
class RocketMQAdapter(Adapter):
    name = "rocketmq"
    fixture = "rocketmq_server"
    module = "etl.components.sinks.rocketmq.build"
    bad_address_error = "name server 127.0.0.1:1 is not reachable"

    def sink(self, t: Target) -> dict:
        return {"type": "rocketmq", "namesrv": t.server.namesrv_addr, "topic": t.name, "key": "cast(id AS string)"}

    def bad_address(self, t: Target) -> dict:
        return {**self.sink(t), "namesrv": "127.0.0.1:1"}

    def has_source(self) -> bool:
        return importlib.util.find_spec("etl.components.sources.rocketmq.build") is not None

    def source(self, t: Target) -> dict | None:
        return {"type": "rocketmq", "namesrv": t.server.namesrv_addr, "topic": t.name,
                "schema": {"id": "bigint", "name": "string", "amount": "double", "ts": "timestamp"}}

    def read_back(self, t: Target, expected: int) -> list[dict]:
        # every queue from its first offset, each time (rocketmq.client.PullConsumer keeps one offset
        # table per process: a second read-back would only see messages newer than the first)
        from etl.connectors import rocketmq_client as rmq
        from etl.components.sources.rocketmq.build import pull_range

        c = rmq.shared_consumer(t.server.namesrv_addr, "contract-read-back")
        rows: list[dict] = []
        deadline = time.monotonic() + 30
        while True:
            try:
                rows = []
                for q in rmq.topic_queues(t.server.namesrv_addr, t.name) or []:
                    lo, hi = c.bounds(t.name, q)
                    for m in pull_range(c, t.name, q, lo, hi, grace=0.0):
                        row = json.loads(m.body)
                        assert m.keys == str(row["id"]), (m.keys, row)
                        rows.append(row)
            except rmq.Unavailable:
                if expected == 0 or time.monotonic() > deadline:  # polled while the server is down
                    return []
                time.sleep(1)
                continue
            if len(rows) >= expected or time.monotonic() > deadline:
                return rows
            time.sleep(0.5)
