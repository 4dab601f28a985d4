"""Bad rows of every kind never stop a stream: Kafka -> derive -> two selects -> MySQL and Kafka, real servers.

200 JSON messages; every tenth one is bad in one of six ways (the oracle below says which and where it must end):
- malformed JSON: a dead letter of the Kafka source;
- a bad cast, a division by zero, an unparsable timestamp: dead letters of the derive (ANSI SQL throws), with
  the expression's position in the pipeline file and Spark's error class;
- a name too long for the MySQL column: a dead letter of the MySQL sink (server error 1406), delivered to Kafka;
- a value too large for the output topic: a dead letter of the Kafka sink (MSG_SIZE_TOO_LARGE), inserted into MySQL.
The table and the topic hold exactly the oracle's good rows, the dead letters exactly the bad ones (stage and
reason), the run ends by itself without a failure, and a second run over the same checkpoint writes nothing twice.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.contract.adapters import consume_all
from tests.contract.harness import run_once

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(900)]

EVENTS = 200
KINDS = ["malformed", "cast", "div0", "timestamp", "too_long", "oversize"]
TOPIC_LIMIT = 4000  # max.message.bytes of the output topic

PIPELINE = """\
name: bad-rows-{suffix}
sources:
  - id: events
    type: kafka
    bootstrap_servers: "{bootstrap}"
    topics: [{source_topic}]
    starting_offsets: earliest
    format: json
    schema: {{id: bigint, qty: string, d: int, ts: string, name: string, blob: string}}
transforms:
  - id: typed
    type: derive
    input: events
    columns:
      n: "cast(qty as int)"
      ratio: "100 div d"
      at: "to_timestamp(ts, 'yyyy-MM-dd HH:mm:ss')"
  - {{id: to_db, type: select, input: typed, fields: [id, n, ratio, name]}}
  - {{id: to_bus, type: select, input: typed, fields: [id, n, name, blob]}}
sinks:
  - id: db
    type: mysql
    input: to_db
    host: "{host}"
    port: {port}
    user: "{user}"
    password: "{password}"
    database: "{database}"
    table: {table}
    mode: insert
    batch_size: 16
  - id: bus
    type: kafka
    input: to_bus
    bootstrap_servers: "{bootstrap}"
    topic: {sink_topic}
    batch_size: 16
checkpoint: state/checkpoint
"""
CAST_AT, DIV_AT, TS_AT = "15:10", "16:14", "17:11"  # line:col of each derive expression above


def kind_of(i: int) -> str | None:
    return KINDS[(i // 10) % len(KINDS)] if i % 10 == 3 else None


def message(i: int) -> str:
    row = {"id": i, "qty": str(i), "d": 1 + i % 7, "ts": f"2026-01-10 09:{i % 60:02d}:00", "name": f"n{i}",
           "blob": "b" * 20}
    kind = kind_of(i)
    if kind == "malformed":
        return f'{{"id": {i}, "qty": '
    if kind == "cast":
        row["qty"] = f"{i}x"
    elif kind == "div0":
        row["d"] = 0
    elif kind == "timestamp":
        row["ts"] = "yesterday"
    elif kind == "too_long":
        row["name"] = f"name-far-too-long-{i}"
    elif kind == "oversize":
        row["blob"] = "z" * (TOPIC_LIMIT + 1000)
    return json.dumps(row)


def oracle() -> tuple[list[tuple], list[int], dict[int, tuple[str, str]]]:
    """(table rows, ids in the output topic, id -> (stage, start of the reason) of each dead letter)."""
    table, topic, dead = [], [], {}
    for i in range(EVENTS):
        kind = kind_of(i)
        m = json.loads(message(i)) if kind != "malformed" else None
        if kind == "malformed":
            dead[i] = ("events", "")
        elif kind == "cast":
            dead[i] = ("typed", f"p.yaml:{CAST_AT}: derive 'typed' column 'n': CAST_INVALID_INPUT: ")
        elif kind == "div0":
            dead[i] = ("typed", f"p.yaml:{DIV_AT}: derive 'typed' column 'ratio': DIVIDE_BY_ZERO: ")
        elif kind == "timestamp":
            dead[i] = ("typed", f"p.yaml:{TS_AT}: derive 'typed' column 'at': CANNOT_PARSE_TIMESTAMP: ")
        else:
            if kind == "too_long":
                dead[i] = ("db", "mysql 1406: Data too long for column 'name'")
            else:
                table.append((i, i, 100 // m["d"], m["name"]))
            if kind == "oversize":
                dead[i] = ("bus", "kafka MSG_SIZE_TOO_LARGE: ")
            else:
                topic.append(i)
    return table, topic, dead


def test_bad_rows_of_every_kind_go_to_dead_letters_and_the_sinks_get_exactly_the_good_rows(
        spark, kafka_server, mariadb_server, tmp_path: Path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    suffix = uuid.uuid4().hex[:8]
    source_topic, sink_topic, table = f"in_{suffix}", f"out_{suffix}", f"bad_{suffix}"
    admin = AdminClient({"bootstrap.servers": kafka_server.bootstrap_servers})
    for f in admin.create_topics([NewTopic(source_topic, num_partitions=2, replication_factor=1),
                                  NewTopic(sink_topic, num_partitions=1, replication_factor=1,
                                           config={"max.message.bytes": str(TOPIC_LIMIT)})]).values():
        f.result(30)
    producer = Producer({"bootstrap.servers": kafka_server.bootstrap_servers})
    for i in range(EVENTS):
        producer.produce(source_topic, message(i).encode(), key=str(i).encode())
    assert producer.flush(30) == 0
    s = mariadb_server
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{table}` (id BIGINT PRIMARY KEY, n INT, ratio INT, name VARCHAR(12) NOT NULL) "
                    "ENGINE=InnoDB")
    conn.commit()
    conn.close()

    text = PIPELINE.format(suffix=suffix, bootstrap=kafka_server.bootstrap_servers, source_topic=source_topic,
                           sink_topic=sink_topic, host=s.host, port=s.port, user=s.user, password=s.password,
                           database=s.database, table=table)
    work = tmp_path / "run"
    run = run_once(spark, work, text)
    assert run.failure is None
    again = run_once(spark, work, text)  # the same checkpoint: nothing new, nothing written twice
    assert again.failure is None

    want_table, want_topic, want_dead = oracle()
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, n, ratio, name FROM `{table}` ORDER BY id")
        assert [tuple(r) for r in cur.fetchall()] == want_table
    conn.close()
    msgs = consume_all(kafka_server.bootstrap_servers, sink_topic, len(want_topic))
    got_topic = sorted(json.loads(m.value())["id"] for m in msgs)
    assert got_topic == want_topic  # each once
    assert all(json.loads(m.value()) == {"id": json.loads(m.value())["id"], "n": json.loads(m.value())["id"],
                                         "name": f"n{json.loads(m.value())['id']}", "blob": "b" * 20}
               or kind_of(json.loads(m.value())["id"]) == "too_long" for m in msgs)

    dl = work / "state" / "dead_letters"
    dead = [json.loads(x) for f in sorted(dl.glob("part-*.jsonl")) for x in f.read_text().splitlines()]
    by_id: dict[int, dict] = {}
    for d in dead:
        payload = d["payload"]
        i = int(payload.split(",")[0].split(":")[1]) if d["stage"] == "events" else json.loads(payload)["id"]
        assert i not in by_id, f"dead letter {i} twice"
        by_id[i] = d
    assert sorted(by_id) == sorted(want_dead)
    for i, (stage, reason) in want_dead.items():
        d = by_id[i]
        assert d["stage"] == stage and d["pipeline"] == f"bad-rows-{suffix}", d
        if stage == "events":
            assert d["payload"] == message(i)
        else:
            assert d["reason"].startswith(reason) or d["reason"].startswith(str(work / reason)), d["reason"]
        if stage == "typed":
            assert json.loads(d["payload"]) == json.loads(message(i))  # the derive's input row, as JSON
