"""Rows a server rejects one by one become dead letters with the server's reason; the batch's other rows
commit exactly once (and a replay of the batch writes neither twice). Against the real MariaDB and Kafka."""

from __future__ import annotations

import base64
import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]


def dead_letters(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*.jsonl")) for x in f.read_text().splitlines()]


def make_sink(kind: str, options: dict, tmp: Path, name: str):
    from etl import registry
    from etl.runtime.sink import SinkContext

    spec = registry.lookup("sink", kind).spec.model_validate({"id": "out", "inputs": ["x"], "type": kind,
                                                              **options})
    ctx = SinkContext(name, "out", "q", str(tmp / "state" / "checkpoint"), str(tmp))
    return registry.builder_for(spec)(spec, ctx)


# ----------------------------------------------------------------------------- mysql
MYSQL_BAD = {  # id -> (the row's values, the reason's start)
    3: ({"name": "much too long"}, "mysql 1406: Data too long for column 'name'"),
    5: ({"name": None}, "mysql 1048: Column 'name' cannot be null"),
    7: ({"qty": 300}, "mysql 1264: Out of range value for column 'qty'"),
    9: ({"qty": -1}, "mysql 4025: CONSTRAINT `qty_positive` failed"),
    11: ({"parent": 99}, "mysql 1452: Cannot add or update a child row: a foreign key constraint fails"),
    13: ({"id": 100}, "mysql 1062: Duplicate entry '100' for key 'PRIMARY'"),  # in the table already
    15: ({"id": 2}, "mysql 1062: Duplicate entry '2' for key 'PRIMARY'"),  # twice in the batch: the first stays
}


def mysql_rows(ids: range) -> tuple[pa.Table, list[dict], list[tuple[dict, str]]]:
    rows, good, bad = [], [], []
    for i in ids:
        row = {"id": i, "name": f"n{i}", "qty": i % 100, "parent": 1 + i % 2}
        changed, reason = MYSQL_BAD.get(i, ({}, None))
        row.update(changed)
        rows.append(row)
        (bad.append((row, reason)) if reason else good.append(row))
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("qty", pa.int32()), ("parent", pa.int32())])
    return pa.Table.from_pylist(rows, schema), good, bad


def test_mysql_rejected_rows_are_dead_letters_and_the_rest_commits_once(spark, mariadb_server, tmp_path):
    s = mariadb_server
    t = f"r_{uuid.uuid4().hex[:8]}"
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES'")
        cur.execute(f"CREATE TABLE `{t}_p` (id INT PRIMARY KEY) ENGINE=InnoDB")
        cur.execute(f"INSERT INTO `{t}_p` VALUES (1), (2)")
        cur.execute(f"CREATE TABLE `{t}` (id INT PRIMARY KEY, name VARCHAR(5) NOT NULL, qty TINYINT, parent INT, "
                    f"CONSTRAINT qty_positive CHECK (qty >= 0), FOREIGN KEY (parent) REFERENCES `{t}_p` (id)) "
                    "ENGINE=InnoDB")
        cur.execute(f"INSERT INTO `{t}` VALUES (100, 'old', 1, 1)")
    conn.commit()
    conn.close()
    options = {"host": s.host, "port": s.port, "user": s.user, "password": s.password, "database": s.database,
               "table": t, "batch_size": 4}
    table, good, bad = mysql_rows(range(1, 21))
    sink = make_sink("mysql", options, tmp_path, f"rej-{t}")
    res = sink.write_arrow(table.to_batches(max_chunksize=6), 0, table.schema)
    assert not res.skipped
    sink.close()
    # a replay of batch 0 (a restarted run): nothing is written again, neither rows nor dead letters
    again = make_sink("mysql", options, tmp_path, f"rej-{t}")
    assert again.write_arrow(table.to_batches(), 0, table.schema).skipped
    again.close()

    # batch 1 breaks after its dead letters are written, before its rows commit (a crash): the replay
    # writes the rows and no second copy of the dead letters
    table1, good1, bad1 = mysql_rows(range(21, 24))
    table1 = table1.set_column(1, "name", pa.array(["n21", "far too long", "n23"]))
    crashing = make_sink("mysql", options, tmp_path, f"rej-{t}")
    real_flush = crashing.rejects.flush

    def flush_then_crash(batch_id: int) -> int:
        real_flush(batch_id)
        raise RuntimeError("crash between the dead letters and the commit")

    crashing.rejects.flush = flush_then_crash
    with pytest.raises(RuntimeError, match="crash between"):
        crashing.write_arrow(table1.to_batches(), 1, table1.schema)
    crashing.close()
    replay = make_sink("mysql", options, tmp_path, f"rej-{t}")
    assert not replay.write_arrow(table1.to_batches(), 1, table1.schema).skipped
    replay.close()

    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, name, qty, parent FROM `{t}` ORDER BY id")
        got = cur.fetchall()
        cur.execute("SELECT batch_id, rows_written FROM _etl_commits WHERE pipeline=%s ORDER BY batch_id",
                    (f"rej-{t}",))
        markers = cur.fetchall()
    conn.close()
    good_rows = [(r["id"], r["name"], r["qty"], r["parent"]) for r in good]
    assert got == tuple(sorted(good_rows + [(21, "n21", 21, 2), (23, "n23", 23, 2), (100, "old", 1, 1)]))
    assert markers == ((0, len(good)), (1, 2))
    dead = dead_letters(tmp_path / "state" / "dead_letters")
    assert len(dead) == len(bad) + 1, dead
    by_payload = {d["payload"]: d for d in dead}
    for row, reason in bad + [({"id": 22, "name": "far too long", "qty": 22, "parent": 1}, "mysql 1406: ")]:
        d = by_payload[json.dumps(row)]
        assert d["stage"] == "out" and d["pipeline"] == f"rej-{t}"
        assert d["reason"].startswith(reason), (d["reason"], reason)


# ----------------------------------------------------------------------------- kafka
@pytest.mark.parametrize("limit_known", [True, False], ids=["refused-by-the-producer", "refused-by-the-broker"])
def test_kafka_message_too_large_is_a_dead_letter_and_the_rest_commits_once(spark, kafka_server, tmp_path,
                                                                            monkeypatch, limit_known):
    """The producer knows the topic's limit (read at start) and refuses larger messages; when it could not be
    read, the broker refuses them in the batch's transaction, which is produced again without them."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from etl.components.sinks.kafka.build import KafkaSink

    from tests.contract.adapters import consume_all

    topic = f"big_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_server.bootstrap_servers})
    new = NewTopic(topic, num_partitions=1, replication_factor=1, config={"max.message.bytes": "4000"})
    admin.create_topics([new])[topic].result(30)
    values = [json.dumps({"id": i, "text": "x" * (5000 if i in (2, 5) else 10)}) for i in range(8)]
    values[7] = json.dumps({"id": 7, "text": "y" * 1_500_000})  # beyond the producer's own default limit too
    values[4] = json.dumps({"id": 4, "text": base64.b64encode(os.urandom(2960)).decode()})  # incompressible
    if not limit_known:
        monkeypatch.setattr(KafkaSink, "_topic_max_message", lambda self: None)
    table = pa.table({"key": [str(i) for i in range(8)], "value": values})
    options = {"bootstrap_servers": kafka_server.bootstrap_servers, "topic": topic, "batch_size": 3}
    sink = make_sink("kafka", options, tmp_path, f"big-{topic}")
    assert not sink.write_arrow(table.to_batches(), 0, table.schema).skipped
    sink.close()
    again = make_sink("kafka", options, tmp_path, f"big-{topic}")  # a restarted run replays batch 0
    assert again.write_arrow(table.to_batches(), 0, table.schema).skipped
    again.close()
    # the producer checks the uncompressed size; the broker the compressed record batch (2 and 5 compress well)
    delivered = [0, 1, 3, 6] if limit_known else [0, 1, 2, 3, 5, 6]
    msgs = consume_all(kafka_server.bootstrap_servers, topic, len(delivered))
    assert sorted(m.value().decode() for m in msgs) == sorted(values[i] for i in delivered)
    dead = {json.loads(d["payload"])["id"]: d for d in dead_letters(tmp_path / "state" / "dead_letters")}
    assert sorted(dead) == ([2, 4, 5, 7] if limit_known else [4, 7])
    for i, d in dead.items():
        assert d["stage"] == "out" and d["pipeline"] == f"big-{topic}" and d["payload"] == values[i]
        size = len(values[i])
        limit = 4000 if limit_known else 1_000_000
        assert d["reason"] == (
            f"kafka MSG_SIZE_TOO_LARGE: Broker: Message size too large (a value of {size} bytes, refused by the "
            "broker)" if not limit_known and size < limit else
            f"kafka MSG_SIZE_TOO_LARGE: Unable to produce message: Broker: Message size too large (a value of "
            f"{size} bytes; at most {limit} bytes per message)"), d["reason"]


def test_mysql_rejects_through_a_running_pipeline(spark, mariadb_server, tmp_path):
    """The same through `etl run`'s runner: the pipeline's dead-letter sink gets the rejected rows."""
    from tests.contract.harness import pipeline_text, run_once

    s = mariadb_server
    t = f"p_{uuid.uuid4().hex[:8]}"
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{t}` (id BIGINT PRIMARY KEY, name VARCHAR(4) NOT NULL) ENGINE=InnoDB")
    conn.commit()
    conn.close()
    (tmp_path / "input").mkdir()
    names = ["ab", "abcdef", "cd", None, "ef"]
    (tmp_path / "input" / "a.jsonl").write_text("".join(json.dumps({"id": i, "name": n}) + "\n"
                                                        for i, n in enumerate(names)))
    src = {"type": "file", "path": str(tmp_path / "input"), "format": "jsonl",
           "schema": {"id": "bigint", "name": "string"}}
    sink = {"type": "mysql", "host": s.host, "port": s.port, "user": s.user, "password": s.password,
            "database": s.database, "table": t}
    run = run_once(spark, tmp_path / "run", pipeline_text(f"pr-{t}", src, sink))
    assert run.failure is None
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, name FROM `{t}` ORDER BY id")
        assert cur.fetchall() == ((0, "ab"), (2, "cd"), (4, "ef"))
    conn.close()
    dead = sorted(dead_letters(tmp_path / "run" / "state" / "dead_letters"), key=lambda d: d["payload"])
    assert [(d["stage"], d["payload"], d["reason"][:10]) for d in dead] == [
        ("out", '{"id": 1, "name": "abcdef"}', "mysql 1406"), ("out", '{"id": 3, "name": null}', "mysql 1048")]
