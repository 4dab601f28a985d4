"""The SQL example scripts that need servers, run as written against the test servers (issue 23: one script
per connector family). Their env()-templated addresses point at the fixtures, --var gives each run its own
topic / index; the destination is read back and must hold exactly the expected rows.

* pipelines/sql/kafka_mysql.sql (Flink WITH keys): JSON requests on Kafka -> WHERE -> 1-minute TUMBLE with
  COUNT(DISTINCT) -> MySQL upsert on the PRIMARY KEY (the table made beforehand, as Flink's JDBC sink wants).
* pipelines/sql/rocketmq_es.sql (rsqldb WITH keys): JSON orders on RocketMQ read by tag -> MySQL dimension
  table (LEFT JOIN ... FOR SYSTEM_TIME AS OF) -> WHERE -> projection -> Elasticsearch (OpenSearch), the
  PRIMARY KEY as document id.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import datetime, timedelta, UTC
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.servers.examples import produce_kafka, produce_rocketmq, run_example, server_env  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]


def _requests() -> list[dict]:
    """24 requests, one every 10 s from 12:00:00, then one at 12:05:00 that moves the watermark (ts - 30 s) to
    12:04:30 and so closes the windows 12:00 to 12:03."""
    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    out = []
    for i in range(24):
        out.append({"ts": (t0 + timedelta(seconds=10 * i)).isoformat().replace("+00:00", "Z"),
                    "service": ["checkout", "search"][i % 2],
                    "endpoint": "/health/live" if i % 4 == 3 else "/api",
                    "status": 503 if i % 6 == 4 else 200,
                    "latency_ms": float(10 * (i % 5) + 5), "user_id": f"u{i % 3}"})
    out.append({"ts": "2026-03-01T12:05:00Z", "service": "search", "endpoint": "/api", "status": 200,
                "latency_ms": 1.0, "user_id": "u9"})
    return out


def test_kafka_mysql_script(spark, kafka_server, mariadb_server, tmp_path):
    topic = f"sql_requests_{uuid.uuid4().hex[:8]}"
    kafka_server.create_topic(topic, partitions=2)
    events = _requests()
    produce_kafka(kafka_server.bootstrap_servers, topic, [json.dumps(e) for e in events],
                  [e["service"] for e in events])
    conn = mariadb_server.connect(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE sql_service_minute_stats (service VARCHAR(20), window_start DATETIME(3), "
                    "window_end DATETIME(3), requests BIGINT, avg_latency_ms DOUBLE, max_latency_ms DOUBLE, "
                    "users BIGINT, PRIMARY KEY (service, window_start))")
    run = run_example(spark, "sql/kafka_mysql.sql", server_env(kafka_server, mariadb_server), {"topic": topic},
                      tmp_path / "ckpt")
    assert run.failure is None
    with conn.cursor() as cur:
        cur.execute("SELECT service, window_start, window_end, requests, avg_latency_ms, max_latency_ms, users "
                    "FROM sql_service_minute_stats ORDER BY window_start, service")
        got = [(r[0], r[1].strftime("%H:%M"), r[2].strftime("%H:%M"), *r[3:]) for r in cur.fetchall()]
    conn.close()
    # kept: status < 500 and not /health (i % 6 != 4 and i % 4 != 3); even i -> checkout, odd i -> search
    assert got == [  # latency 10 * (i % 5) + 5, user u{i % 3}
        ("checkout", "12:00", "12:01", 2, 15.0, 25.0, 2),  # i = 0, 2 (4: 503)
        ("search", "12:00", "12:01", 2, 10.0, 15.0, 2),  # i = 1, 5 (3: /health)
        ("checkout", "12:01", "12:02", 2, 25.0, 35.0, 2),  # i = 6, 8 (10: 503)
        ("search", "12:01", "12:02", 1, 45.0, 45.0, 1),  # i = 9 (7, 11: /health)
        ("checkout", "12:02", "12:03", 2, 35.0, 45.0, 2),  # i = 12, 14 (16: 503)
        ("search", "12:02", "12:03", 2, 30.0, 35.0, 2),  # i = 13, 17 (15: /health)
        ("checkout", "12:03", "12:04", 2, 20.0, 35.0, 2),  # i = 18, 20 (22: 503)
        ("search", "12:03", "12:04", 1, 15.0, 15.0, 1),  # i = 21 (19, 23: /health)
    ]


def test_rocketmq_es_script(spark, rocketmq_server, mariadb_server, opensearch_server, tmp_path):
    topic = f"sql_orders_{uuid.uuid4().hex[:8]}"
    index = f"sql-paid-orders-{uuid.uuid4().hex[:8]}"
    conn = mariadb_server.connect(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE sql_customers (user_id VARCHAR(10) PRIMARY KEY, name VARCHAR(50), "
                    "tier VARCHAR(10))")
        cur.executemany("INSERT INTO sql_customers VALUES (%s, %s, %s)",
                        [("u1", "Ada", "gold"), ("u2", "Linus", "silver"), ("u3", "Grace", None), ("u4", "Edsger", "bronze")])
    conn.close()
    orders = [{"order_id": f"o{i}", "user_id": f"u{i % 5 + 1}", "amount": [5.0, 12.5, 40.0][i % 3],
               "item": ["book", "pen"][i % 2]} for i in range(16)]
    # every fourth order is still pending: another tag, not read
    produce_rocketmq(rocketmq_server.namesrv_addr, topic, [json.dumps(o).encode() for o in orders],
                     tags=["pending" if i % 4 == 3 else "paid" for i in range(16)], keys=[o["order_id"] for o in orders])
    env = server_env(mariadb=mariadb_server, opensearch=opensearch_server, rocketmq=rocketmq_server)
    run = run_example(spark, "sql/rocketmq_es.sql", env, {"topic": topic, "index": index}, tmp_path / "ckpt")
    assert run.failure is None
    opensearch_server.request("POST", f"/{index}/_refresh")
    hits = opensearch_server.request("POST", f"/{index}/_search", {"size": 100})["hits"]["hits"]
    got = {h["_id"]: h["_source"] for h in hits}
    cols = ("order_id", "user_id", "customer", "tier", "amount", "item")
    assert {k: tuple(d.get(c) for c in cols) for k, d in got.items()} == {
        # paid (i % 4 != 3) and amount >= 10 (i % 3 != 0); user u{i % 5 + 1}, u5 not in the table
        "o1": ("o1", "u2", "Linus", "silver", 12.5, "PEN"),
        "o2": ("o2", "u3", "Grace", None, 40.0, "BOOK"),
        "o4": ("o4", "u5", "unknown", None, 12.5, "BOOK"),
        "o5": ("o5", "u1", "Ada", "gold", 40.0, "PEN"),
        "o8": ("o8", "u4", "Edsger", "bronze", 40.0, "BOOK"),
        "o10": ("o10", "u1", "Ada", "gold", 12.5, "BOOK"),
        "o13": ("o13", "u4", "Edsger", "bronze", 12.5, "PEN"),
        "o14": ("o14", "u5", "unknown", None, 40.0, "BOOK"),
    }
    assert sorted(k for k, d in got.items() if set(d) != set(cols)) == ["o14", "o2", "o4"]
    assert all(set(d) == set(cols) - {"tier"} for k, d in got.items() if k in ("o2", "o4", "o14"))  # nulls left out


def test_kafka_startup_modes_and_client_properties(spark, kafka_server, tmp_path):
    """Flink's scan.startup.mode specific-offsets and timestamp, and 'properties.*' client settings, against a
    real two-partition topic (etl/sql/connectors.py maps them onto starting_offsets and options)."""
    from confluent_kafka import Producer

    from etl.check import check_file
    from etl.runtime.runner import PipelineRun, RunOptions
    from etl.runtime.testing import CaptureSink

    topic = f"sql_startup_{uuid.uuid4().hex[:8]}"
    kafka_server.create_topic(topic, partitions=2)
    base = 1_767_225_600_000  # 2026-01-01T00:00:00Z, message timestamps base + n s
    p = Producer({"bootstrap.servers": kafka_server.bootstrap_servers, "enable.idempotence": True})
    for part in (0, 1):
        for n in range(10):
            p.produce(topic, json.dumps({"p": part, "n": n}).encode(), partition=part, timestamp=base + 1000 * n)
    assert p.flush(60) == 0

    def read(startup: str, name: str) -> list[tuple]:
        script = tmp_path / f"{name}.sql"
        script.write_text(f"""
            CREATE TABLE src (p INT, n INT) WITH (
              'connector' = 'kafka', 'topic' = '{topic}', 'format' = 'json',
              'properties.bootstrap.servers' = '{kafka_server.bootstrap_servers}', 'properties.group.id' = 'etl-sql',
              'properties.isolation.level' = 'read_committed', 'properties.fetch.min.bytes' = '1',
              {startup});
            CREATE TABLE out (p INT, n INT) WITH (type = 'print');
            INSERT INTO out SELECT * FROM src;
        """)
        checked = check_file(script, programs=True)
        assert checked.plan is not None, "\n".join(d.render() for d in checked.report.sorted())
        rows: list[dict] = []
        run = PipelineRun(checked.plan, spark, RunOptions(once=True, checkpoint=str(tmp_path / f"ck_{name}"),
                                                          progress="none",
                                                          sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows)))
        run.start()
        run.wait()
        assert run.failure is None
        return sorted((r["p"], r["n"]) for r in rows if "p" in r)

    assert read("'scan.startup.mode' = 'specific-offsets', "
                "'scan.startup.specific-offsets' = 'partition:0,offset:7;partition:1,offset:3'", "specific") == \
        [(0, 7), (0, 8), (0, 9)] + [(1, n) for n in range(3, 10)]
    assert read(f"'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '{base + 6000}'",
                "timestamp") == [(0, 6), (0, 7), (0, 8), (0, 9), (1, 6), (1, 7), (1, 8), (1, 9)]
