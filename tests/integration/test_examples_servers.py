"""The example pipelines that need servers, run as written against the test servers: their
env()-templated addresses point at the fixtures, --var gives each run its own topic/index.

* pipelines/kafka_window_mysql.yaml: JSON requests on Kafka -> filter -> 1-minute windows ->
  MySQL upsert; the table must equal a Python oracle of the same windows.
* pipelines/kafka_grok_opensearch.yaml: access-log lines on Kafka -> grok -> derive -> filter ->
  OpenSearch; every interesting line indexed once (deterministic ids), bad lines in dead letters.
* pipelines/lookup_mysql.yaml: orders from two topics + payments (union, dedupe, join), enriched from a
  MySQL table (lookup), routed by tier to two topics; plus both readers of its MySQL table.
"""

from __future__ import annotations

import json
import random
import re
import sys
import uuid
from collections import Counter, defaultdict
from datetime import datetime, timedelta, UTC
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.servers.examples import produce_kafka, run_example, server_env  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]


# ------------------------------------------------------------ kafka -> window -> mysql
SERVICES = ["checkout", "search", "auth"]
ENDPOINTS = ["/api/pay", "/api/find", "/login", "/health/live"]


def request_events(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    out = []
    for i in range(n):
        out.append({"ts": (t0 + timedelta(milliseconds=250 * i)).isoformat().replace("+00:00", "Z"),
                    "service": rng.choice(SERVICES), "endpoint": rng.choice(ENDPOINTS),
                    "status": rng.choice([200, 200, 200, 201, 404, 500, 503]),
                    "latency_ms": float(rng.randint(1, 900)), "user_id": f"u{rng.randint(1, 8)}"})
    return out


def window_oracle(events: list[dict], size_s: int = 60, watermark_s: int = 30) -> dict[tuple, dict]:
    """The tumbling windows the pipeline emits: closed by the final watermark (max event time - 30 s)."""
    def ts(e):
        return datetime.fromisoformat(e["ts"].replace("Z", "+00:00"))

    wm = max(ts(e) for e in events) - timedelta(seconds=watermark_s)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for e in events:
        if e["status"] < 500 and not e["endpoint"].startswith("/health"):
            t = ts(e)
            start = t - timedelta(seconds=t.timestamp() % size_s)
            groups[(e["service"], start.replace(tzinfo=None))].append(e)
    out = {}
    for (svc, start), rows in groups.items():
        if start.replace(tzinfo=UTC) + timedelta(seconds=size_s) <= wm:
            lat = [r["latency_ms"] for r in rows]
            out[(svc, start)] = {"requests": len(rows), "avg": sum(lat) / len(lat), "max": max(lat),
                                 "users": len({r["user_id"] for r in rows})}
    return out


def test_kafka_window_mysql_example(spark, kafka_server, mariadb_server, tmp_path):
    topic = f"requests_{uuid.uuid4().hex[:8]}"
    kafka_server.create_topic(topic, partitions=2)
    events = request_events(2400)  # 10 minutes of event time
    produce_kafka(kafka_server.bootstrap_servers, topic, [json.dumps(e) for e in events],
             [e["service"] for e in events])
    conn = mariadb_server.connect(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS service_minute_stats")
    run = run_example(spark, "kafka_window_mysql.yaml", server_env(kafka_server, mariadb_server), {"topic": topic},
                       tmp_path / "ckpt")
    assert run.failure is None
    with conn.cursor() as cur:
        cur.execute("SELECT service, window_start, window_end, requests, avg_latency_ms, max_latency_ms, users "
                    "FROM service_minute_stats")
        got = cur.fetchall()
    conn.close()
    want = window_oracle(events)
    assert len(got) == len(got and {(r[0], r[1]) for r in got}), "a window row is repeated"
    by_key = {(r[0], r[1]): r for r in got}
    assert set(by_key) == set(want), (sorted(set(want) - set(by_key))[:3], sorted(set(by_key) - set(want))[:3])
    for key, w in want.items():
        r = by_key[key]
        assert r[2] == key[1] + timedelta(minutes=1)
        assert r[3] == w["requests"] and r[5] == w["max"], (key, r, w)
        assert abs(r[4] - w["avg"]) < 1e-9, (key, r, w)
        assert abs(r[6] - w["users"]) <= 1, (key, r, w)  # approx_count_distinct


# ------------------------------------------------------------ kafka -> grok -> opensearch
LINE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\S+) "[^"]*" "[^"]*" rt=([\d.]+)$')


def test_kafka_grok_opensearch_example(spark, kafka_server, opensearch_server, tmp_path):
    topic = f"access_{uuid.uuid4().hex[:8]}"
    index = f"access-errors-{uuid.uuid4().hex[:8]}"
    rng = random.Random(3)
    lines = [f"{ln} rt={rng.choice([0.05, 0.3, 1.2, 2.5, 4.0])}"
             for ln in (REPO / "pipelines" / "data" / "access.log").read_text().splitlines() if ln]
    bad = ["garbage line without structure", "GET / HTTP/1.1"]
    produce_kafka(kafka_server.bootstrap_servers, topic, lines[:200] + bad + lines[200:])
    ckpt = tmp_path / "ckpt"
    run = run_example(spark, "kafka_grok_opensearch.yaml", server_env(kafka_server, opensearch=opensearch_server),
                       {"topic": topic, "index": index}, ckpt)
    assert run.failure is None
    want: Counter = Counter()  # one document per interesting line (their timestamps differ)
    for ln in lines:
        m = LINE.match(ln)
        assert m, ln
        if int(m.group(5)) >= 500 or float(m.group(7)) > 2.0:
            want[(m.group(1), m.group(4))] += 1
    opensearch_server.request("POST", f"/{index}/_refresh")
    hits = opensearch_server.request("POST", f"/{index}/_search", {"size": 10000})["hits"]["hits"]
    got = Counter((h["_source"]["client_ip"], h["_source"]["request"]) for h in hits)
    assert got == want
    doc = hits[0]["_source"]
    assert set(doc) == {"event_ts", "client_ip", "method", "request", "status", "size", "response_time", "agent"}
    assert doc["event_ts"].startswith("2026-01-10T") and doc["event_ts"].endswith("Z")
    # a replay of the whole topic (fresh checkpoint) overwrites the same documents: ids are deterministic
    run_example(spark, "kafka_grok_opensearch.yaml", server_env(kafka_server, opensearch=opensearch_server),
                 {"topic": topic, "index": index}, tmp_path / "ckpt2")
    opensearch_server.request("POST", f"/{index}/_refresh")
    assert opensearch_server.request("GET", f"/{index}/_count")["count"] == sum(want.values())
    dead = [json.loads(x) for f in (tmp_path).glob("dead_letters/*.jsonl") for x in f.read_text().splitlines()]
    assert sorted(d["payload"] for d in dead if d["stage"] == "parsed") == sorted(bad + bad)


# ------------------------------------------------------------ lookup_mysql (dimension table reader)
def test_lookup_mysql_dimension_table(spark, kafka_server, mariadb_server, tmp_path):
    """The mysql source of pipelines/lookup_mysql.yaml read by both readers the lookup transform can use."""
    from etl.check import check_file
    from etl.components.sources.mysql.build import read_mysql_jdbc, read_mysql_table

    conn = mariadb_server.connect(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(50), "
                    "country CHAR(2), tier VARCHAR(10), extra INT)")
        cur.executemany("INSERT INTO customers VALUES (%s, %s, %s, %s, %s)",
                        [(1, "Ada", "GB", "gold", 1), (2, "Linus", "FI", "silver", 2), (3, "Grace", "US", None, 3)])
    conn.close()
    checked = check_file(REPO / "pipelines" / "lookup_mysql.yaml", environ=server_env(kafka_server, mariadb_server))
    assert checked.plan is not None, "\n".join(d.render() for d in checked.report.sorted())
    spec = checked.graph.nodes["customers"].spec
    table = read_mysql_table(spec)
    assert table.column_names == ["id", "name", "country", "tier"]
    assert str(table.schema.field("id").type) == "int64"
    assert sorted(table.to_pylist(), key=lambda r: r["id"])[2] == {"id": 3, "name": "Grace", "country": "US",
                                                                   "tier": None}
    df = read_mysql_jdbc(spark, spec)
    assert [f.name for f in df.schema.fields] == ["id", "name", "country", "tier"]
    assert sorted(r.name for r in df.collect()) == ["Ada", "Grace", "Linus"]
    from etl.components.sources.mysql.build import MySQLReadError

    bad = spec.model_copy(update={"password": "nope"})
    with pytest.raises(MySQLReadError, match=r"mysql source 'customers' .*denied.*check user and password"):
        read_mysql_table(bad)


def test_lookup_mysql_example(spark, kafka_server, mariadb_server, tmp_path):
    """Orders (two topics, one repeated) + payments joined, enriched from MySQL, routed by tier to two topics."""
    from tests.contract.adapters import consume_all

    conn = mariadb_server.connect(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR(50), "
                    "country CHAR(2), tier VARCHAR(10))")
        cur.executemany("INSERT INTO customers VALUES (%s, %s, %s, %s)",
                        [(1, "Ada", "GB", "gold"), (2, "Linus", "FI", "silver"), (3, "Grace", "US", "bronze")])
    conn.close()
    t0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)

    def iso(t):
        return t.isoformat().replace("+00:00", "Z")

    orders = [{"order_id": f"o{i}", "customer_id": i % 4 + 1, "amount": [20.0, 1500.0, 75.5][i % 3],
               "currency": "EUR", "created_at": iso(t0 + timedelta(seconds=20 * i))} for i in range(30)]
    web, mobile = orders[::2], orders[1::2]
    payments = [{"order_id": o["order_id"], "paid_at": iso(t0 + timedelta(seconds=20 * i + 90)), "method": "card"}
                for i, o in enumerate(orders) if i % 5 != 4]  # every fifth order is never paid
    bs = kafka_server.bootstrap_servers
    produce_kafka(bs, "orders-web", [json.dumps(o) for o in web] + [json.dumps(web[0])])  # a repeated order
    produce_kafka(bs, "orders-mobile", [json.dumps(o) for o in mobile])
    produce_kafka(bs, "payments", [json.dumps(p) for p in payments])
    run = run_example(spark, "lookup_mysql.yaml", server_env(kafka_server, mariadb_server), {}, tmp_path / "ckpt")
    assert run.failure is None
    tiers = {1: "gold", 2: "silver", 3: "bronze"}
    paid = {p["order_id"] for p in payments}
    want_vip = sorted(o["order_id"] for o in orders if o["order_id"] in paid
                      and (tiers.get(o["customer_id"]) == "gold" or o["amount"] > 1000))
    want_regular = sorted(o["order_id"] for o in orders if o["order_id"] in paid and o["order_id"] not in want_vip)
    vip = consume_all(bs, "orders-vip", len(want_vip))
    regular = consume_all(bs, "orders-regular", len(want_regular))
    assert sorted(m.key().decode() for m in vip) == want_vip
    assert sorted(m.key().decode() for m in regular) == want_regular
    doc = json.loads(next(m for m in vip if m.key() == b"o0").value())
    assert doc["customer_name"] == "Ada" and doc["tier"] == "gold" and doc["minutes_to_pay"] == 1.5
    assert dict(next(m for m in vip if m.key() == b"o0").headers()) == {"country": b"GB"}
    unknown = json.loads(next(m for m in regular if m.key() == b"o3").value())  # customer 4 is not in the table
    assert unknown["customer_name"] == "unknown" and unknown.get("tier") is None  # to_json leaves nulls out
