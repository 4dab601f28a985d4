"""Connector behaviour beyond the contract suite, against the real servers:

* kafka source: JSON values decoded to the schema, malformed values to dead letters with the reason,
  key/headers in text format, a wrong address failing at start with the YAML line;
* elasticsearch sink: mapping rejections to dead letters (once, even when replayed), per-item 429
  retried with backoff;
* mysql sink: upsert / ignore modes, identifiers validated, marker table.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.contract.harness import pipeline_text, plan_of, run_once  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]


def _dead(tmp: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(tmp.rglob("dead_letters/*.jsonl")) for x in f.read_text().splitlines()]


def _out(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*.jsonl")) for x in f.read_text().splitlines()]


# ----------------------------------------------------------------------------- kafka source
def test_kafka_source_json_text_and_dead_letters(spark, kafka_server, tmp_path):
    from confluent_kafka import Producer

    topic = f"src_{uuid.uuid4().hex[:8]}"
    kafka_server.create_topic(topic, partitions=2)
    p = Producer({"bootstrap.servers": kafka_server.bootstrap_servers})
    good = [{"id": i, "name": f"n{i}", "ts": f"2026-01-01T00:00:{i:02d}Z"} for i in range(10)]
    for r in good:
        p.produce(topic, key=str(r["id"]), value=json.dumps(r), headers=[("origin", b"test"), ("n", str(r["id"]))])
    bad = ["not json", "[1, 2]", '{"id": "seven"}', ""]
    for b in bad:
        p.produce(topic, value=b)
    p.produce(topic, value=None, key="tombstone")
    assert p.flush(30) == 0
    schema = {"id": "bigint", "name": "string", "ts": "timestamp"}
    src = {"type": "kafka", "bootstrap_servers": kafka_server.bootstrap_servers, "topics": [topic], "schema": schema,
           "event_time": {"field": "ts", "watermark": "10s"}, "max_offsets_per_trigger": 4}
    run_once(spark, tmp_path, pipeline_text("kafka-src", src, {"type": "file", "path": "out"}))
    assert sorted(r["id"] for r in _out(tmp_path / "out")) == list(range(10))
    reasons = {d.get("payload"): d["reason"] for d in _dead(tmp_path)}
    assert reasons == {"not json": "malformed json", "[1, 2]": "json value is not an object",
                       '{"id": "seven"}': "json does not match the declared schema (id bigint, name string, "
                                          "ts timestamp)", "": "empty message value",
                       None: "null message value (tombstone)"}, reasons
    assert len(_dead(tmp_path)) == 5

    text = {"type": "kafka", "bootstrap_servers": kafka_server.bootstrap_servers, "pattern": f"{topic[:8]}.*",
            "format": "text", "value_column": "line"}
    run_once(spark, tmp_path / "t", pipeline_text("kafka-src-text", text, {"type": "file", "path": "out"}))
    rows = [r for r in _out(tmp_path / "t" / "out") if r.get("key") == "3"]
    assert len(rows) == 1 and rows[0]["headers"] == {"origin": "test", "n": "3"} and rows[0]["topic"] == topic
    assert json.loads(rows[0]["line"])["name"] == "n3"


def test_kafka_source_wrong_address_fails_at_start_with_the_line(spark, tmp_path):
    from etl.compile.context import CompileError
    from etl.runtime.runner import PipelineRun, RunOptions

    src = {"type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topics": ["x"], "format": "text"}
    plan = plan_of(tmp_path, pipeline_text("kafka-bad", src, {"type": "file", "path": "out"}))
    run = PipelineRun(plan, spark, RunOptions(once=True, progress="none"))
    with pytest.raises(CompileError) as err:
        run.start()
    run.close()
    text = err.value.diagnostic(plan.graph).render()
    assert "p.yaml:3:" in text and "E407" in text and "kafka source 'events': cannot reach Kafka at 127.0.0.1:1" in text


# ----------------------------------------------------------------------------- elasticsearch
def test_elasticsearch_rejected_documents_go_to_dead_letters_once(spark, opensearch_server, tmp_path):
    index = f"rej-{uuid.uuid4().hex[:8]}"
    opensearch_server.request("PUT", f"/{index}", {"mappings": {"properties": {"n": {"type": "integer"}}}})
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(json.dumps({"id": i, "n": str(i) if i % 5 else "not a number"}) + "\n"
                                            for i in range(20)))
    src = {"type": "file", "path": str(folder), "schema": {"id": "bigint", "n": "string"}}
    sink = {"type": "elasticsearch", "hosts": [opensearch_server.url], "index": index, "id_fields": ["id"]}
    run_once(spark, tmp_path / "run", pipeline_text(f"es-{index}", src, sink))
    opensearch_server.request("POST", f"/{index}/_refresh")
    assert opensearch_server.request("GET", f"/{index}/_count")["count"] == 16
    dead = _dead(tmp_path / "run")
    assert sorted(json.loads(d["payload"])["id"] for d in dead) == [0, 5, 10, 15]
    assert all(d["stage"] == "out" and "mapper_parsing_exception" in d["reason"] for d in dead), dead[0]

    # the same batch replayed by a sink that does not know it was committed: same ids, same dead letters
    from etl import registry
    from etl.runtime.sink import SinkContext

    spec = registry.lookup("sink", "elasticsearch").spec.model_validate({"id": "out", "inputs": ["e"], **sink})
    ckpt = tmp_path / "run" / "state" / "checkpoint"
    ctx = SinkContext(f"es-{index}", "out", "events", str(ckpt), str(tmp_path / "run"),
                      checkpoint=str(ckpt / "events"))
    es = registry.builder_for(spec)(spec, ctx)
    df = spark.read.schema("id bigint, n string").json(str(folder))
    table = es.prepare(df).toArrow()
    es.begin(0, table.schema)
    es.batch_insert(table)
    es.commit(0)
    opensearch_server.request("POST", f"/{index}/_refresh")
    assert opensearch_server.request("GET", f"/{index}/_count")["count"] == 16
    assert len(_dead(tmp_path / "run")) == 4


class _Flaky(BaseHTTPRequestHandler):
    """A fake _bulk endpoint: item 429 for the first attempt of every document, then 201."""

    seen: dict[str, int] = {}
    bodies: list[str] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        _Flaky.bodies.append(body)
        lines = body.splitlines()
        items = []
        for action in lines[0::2]:
            doc_id = json.loads(action)["index"]["_id"]
            n = _Flaky.seen[doc_id] = _Flaky.seen.get(doc_id, 0) + 1
            status = 429 if n == 1 else 201
            items.append({"index": {"_id": doc_id, "status": status,
                                    **({"error": {"type": "es_rejected_execution_exception"}} if status == 429 else {})}})
        out = json.dumps({"errors": any(i["index"]["status"] == 429 for i in items), "items": items}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def test_elasticsearch_item_429_is_retried_with_backoff(tmp_path):
    from etl import registry
    from etl.runtime.sink import SinkContext

    server = HTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        spec = registry.lookup("sink", "elasticsearch").spec.model_validate(
            {"id": "out", "inputs": ["e"], "type": "elasticsearch", "hosts": [f"http://127.0.0.1:{server.server_port}"],
             "index": "x", "retry": {"initial_backoff": "50ms"}})
        waits: list[float] = []
        es = registry.builder_for(spec)(spec, SinkContext("p", "out", "q", str(tmp_path), str(tmp_path),
                                                          sleep=waits.append))
        table = pa.table({"_id": ["a", "b", "c"], "_doc": ['{"v":1}', '{"v":2}', '{"v":3}']})
        es.begin(0, table.schema)
        es.batch_insert(table)
        es.commit(0)
    finally:
        server.shutdown()
    assert waits == [0.05] and es.item_retries == 1 and es.rejected == 0
    assert len(_Flaky.bodies) == 2 and _Flaky.bodies[1].count("\n") == 6  # the 3 refused documents, again


# ----------------------------------------------------------------------------- mysql
def test_mysql_upsert_and_ignore_modes(spark, mariadb_server, tmp_path):
    table = f"m_{uuid.uuid4().hex[:8]}"
    s = mariadb_server
    base = {"type": "mysql", "host": s.host, "port": s.port, "user": s.user, "password": s.password,
            "database": s.database, "table": table}
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(json.dumps({"k": i % 3, "v": i, "tags": ["x", str(i)]}) + "\n"
                                            for i in range(7)))
    src = {"type": "file", "path": str(folder), "schema": {"k": "bigint", "v": "bigint", "tags": "array<string>"},
           "max_files_per_trigger": 1}
    run_once(spark, tmp_path / "up", pipeline_text(f"up-{table}", src, {**base, "mode": "upsert", "key": ["k"],
                                                                          "create_table": True, "batch_size": 2}))
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT k, v, tags FROM `{table}` ORDER BY k")
        got = cur.fetchall()
        cur.execute(f"SHOW CREATE TABLE `{table}`")
        ddl = cur.fetchone()[1]
        cur.execute("SELECT pipeline, sink, batch_id, rows_written FROM _etl_commits WHERE pipeline=%s",
                    (f"up-{table}",))
        markers = cur.fetchall()
    conn.close()
    # one micro-batch, chunks of 2 rows: for each key the row written last wins (arrival order within a file)
    assert {r[0] for r in got} == {0, 1, 2} and len(got) == 3
    assert all(json.loads(r[2])[0] == "x" for r in got)
    assert "PRIMARY KEY (`k`)" in ddl
    assert markers == ((f"up-{table}", "out", 0, 7),)
    (folder / "b.jsonl").write_text(json.dumps({"k": 0, "v": 100, "tags": []}) + "\n")
    run_once(spark, tmp_path / "ig", pipeline_text(f"ig-{table}", src, {**base, "mode": "ignore"}))
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM `{table}`")
        assert cur.fetchone() == (3,)
        cur.execute(f"SELECT v FROM `{table}` WHERE k = 0")
        assert cur.fetchone()[0] != 100  # ignored: the key exists
    conn.close()


# ----------------------------------------------------------------------------- kafka sink, at least once
def test_kafka_sink_at_least_once_and_replay_marker(kafka_server, tmp_path):
    """delivery: at_least_once: idempotent producer without transactions; exactly_once: a second sink
    instance (a restarted run) finds the batch in the marker topic."""
    from etl import registry
    from etl.runtime.sink import SinkContext
    from tests.contract.adapters import consume_all

    topic = f"alo_{uuid.uuid4().hex[:8]}"
    table = pa.table({"key": ["a", "b", None], "value": ['{"v":1}', '{"v":2}', '{"v":3}']})
    for delivery in ("at_least_once", "exactly_once"):
        spec = registry.lookup("sink", "kafka").spec.model_validate(
            {"id": "out", "inputs": ["x"], "type": "kafka", "bootstrap_servers": kafka_server.bootstrap_servers,
             "topic": topic, "delivery": delivery})
        ctx = SinkContext(f"alo-{delivery}", "out", "q", str(tmp_path / delivery), str(tmp_path))
        sink = registry.builder_for(spec)(spec, ctx)
        assert sink.write_arrow(table.to_batches(), 0, table.schema).rows == 3
        sink.close()
        again = registry.builder_for(spec)(spec, ctx)
        assert again.write_arrow(table.to_batches(), 0, table.schema).skipped
        assert not again.is_committed(1)
        again.close()
    msgs = consume_all(kafka_server.bootstrap_servers, topic, 6)
    assert sorted(m.value() for m in msgs) == sorted([b'{"v":1}', b'{"v":2}', b'{"v":3}'] * 2)
    assert {m.key() for m in msgs} == {b"a", b"b", None}
