"""End to end on Spark: a SQL script (file source -> WHERE -> TUMBLE window -> file sink), exact output rows;
and `etl test` on the example scripts through their `<name>.tests.yaml`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from etl.check import check_file

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """\
-- requests -> keep errors of the api (rules) with a latency (expr) -> per-minute counts -> jsonl
CREATE TABLE requests (
  ts TIMESTAMP(3),
  path VARCHAR,
  status INT,
  latency_ms DOUBLE,
  WATERMARK FOR ts AS ts - INTERVAL '10' SECOND
) WITH (type = 'file', filePath = 'in', isJsonData = 'true');

CREATE TABLE per_minute (path VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, errors BIGINT,
                         slowest DOUBLE)
WITH (type = 'file', filePath = 'out');

INSERT INTO per_minute
SELECT path, TUMBLE_START(ts, INTERVAL '1' MINUTE), TUMBLE_END(ts, INTERVAL '1' MINUTE), COUNT(*), MAX(latency_ms)
FROM requests
WHERE path LIKE '/api/%' AND status >= 500 AND latency_ms IS NOT NULL
GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), path;
"""

EVENTS = [
    {"ts": "2026-01-10T09:00:01Z", "path": "/api/cart", "status": 500, "latency_ms": 120.0},
    {"ts": "2026-01-10T09:00:20Z", "path": "/api/cart", "status": 503, "latency_ms": 340.5},
    {"ts": "2026-01-10T09:00:30Z", "path": "/api/cart", "status": 200, "latency_ms": 10.0},  # not an error
    {"ts": "2026-01-10T09:00:40Z", "path": "/static/x", "status": 500, "latency_ms": 5.0},  # not /api/
    {"ts": "2026-01-10T09:00:45Z", "path": "/api/pay", "status": 502, "latency_ms": None},  # no latency
    {"ts": "2026-01-10T09:00:50Z", "path": "/api/pay", "status": 504, "latency_ms": 999.0},
    {"ts": "2026-01-10T09:01:05Z", "path": "/api/cart", "status": 500, "latency_ms": 77.0},
    {"ts": "2026-01-10T09:03:00Z", "path": "/api/pay", "status": 500, "latency_ms": 1.0},  # moves the watermark
]


@pytest.mark.spark
def test_sql_script_runs_file_filter_window_file(spark, tmp_path):
    from etl.runtime.runner import PipelineRun, RunOptions

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-0.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    (tmp_path / "job.sql").write_text(SCRIPT)
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    assert [n.type for n in c.graph.nodes.values()] == ["file", "filter", "window", "select", "file"]
    run = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(tmp_path / "ck"), progress="none"))
    run.start()
    run.wait()
    files = sorted((tmp_path / "out").rglob("*.jsonl"))
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    rows.sort(key=lambda r: (r["window_start"], r["path"]))
    assert rows == [
        {"path": "/api/cart", "window_start": "2026-01-10T09:00:00.000Z", "window_end": "2026-01-10T09:01:00.000Z",
         "errors": 2, "slowest": 340.5},
        {"path": "/api/pay", "window_start": "2026-01-10T09:00:00.000Z", "window_end": "2026-01-10T09:01:00.000Z",
         "errors": 1, "slowest": 999.0},
        {"path": "/api/cart", "window_start": "2026-01-10T09:01:00.000Z", "window_end": "2026-01-10T09:02:00.000Z",
         "errors": 1, "slowest": 77.0},
    ]


# the example scripts whose tests blocks run here (test_sql_fixtures_run.py runs the others on generated rows)
EXAMPLE_SCRIPTS = ["aggregate", "aggregate_every", "dedupe", "dedupe_last", "filter", "interval_join", "lateral", "regular_join", "temporal_join",
                   "topn",
                   "topn_continuous", "window", "window_join", "window_late", "window_tvf"]


@pytest.mark.spark
@pytest.mark.parametrize("name", EXAMPLE_SCRIPTS)
def test_example_scripts_pass_their_tests(spark, name):
    from etl.runtime.testing import run_tests

    c = check_file(ROOT / "pipelines" / "sql" / f"{name}.sql", programs=True)
    assert c.plan is not None and c.pipeline.tests
    results = run_tests(c, spark)
    assert [r.ok for r in results] == [True] * len(c.pipeline.tests), "\n".join(r.message for r in results)


LATERAL = """\
CREATE TABLE src (id VARCHAR, tags VARCHAR, n INT, doc VARCHAR) WITH (type = 'file', path = 'in');
CREATE TABLE o1 (id VARCHAR, tag VARCHAR) WITH (type = 'file', path = 'o1');
CREATE TABLE o2 (id VARCHAR, i INT) WITH (type = 'file', path = 'o2');
CREATE TABLE o3 (id VARCHAR, a VARCHAR, b VARCHAR) WITH (type = 'file', path = 'o3');
INSERT INTO o1 SELECT s.id, t.tag FROM src AS s, LATERAL TABLE(STRING_SPLIT(s.tags, '|')) AS t(tag) WHERE t.tag <> '';
INSERT INTO o2 SELECT id, i FROM src LEFT JOIN LATERAL TABLE(GENERATE_SERIES(1, n)) AS t(i) ON TRUE;
INSERT INTO o3 SELECT id, a, b FROM src, LATERAL TABLE(JSON_TUPLE(doc, 'a', 'b')) AS t(a, b);
"""


@pytest.mark.spark
def test_lateral_table_functions(spark, tmp_path):
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    (tmp_path / "job.sql").write_text(LATERAL)
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    rows = [{"id": "x", "tags": "a|b||c", "n": 2, "doc": '{"a": "1", "b": "2"}'},
            {"id": "y", "tags": "", "n": 0, "doc": '{"a": "3"}'}]
    res = run_case(c.plan, TestCase(name="lateral", inputs={"src": rows}), spark)
    assert res.ok, res.message
    got = {k: sorted(map(lambda r: tuple(r.values()), v)) for k, v in res.captured.items() if k != "dead_letter"}
    assert got == {"o1": [("x", "a"), ("x", "b"), ("x", "c")],
                   "o2": [("x", 1), ("x", 2), ("y", None)],
                   "o3": [("x", "1", "2"), ("y", "3", None)]}


CONTINUOUS = """\
CREATE TABLE src (k VARCHAR, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (type = 'file', path = 'in');
CREATE TABLE big (k VARCHAR, n BIGINT, total BIGINT) WITH (type = 'file', path = 'o1');
CREATE TABLE everything (n BIGINT, newest BIGINT) WITH (type = 'file', path = 'o2');
INSERT INTO big SELECT k, COUNT(*) AS n, SUM(v) AS total FROM src GROUP BY k HAVING SUM(v) >= 10;
INSERT INTO everything SELECT COUNT(*), LAST_VALUE(v) FROM src;
"""


@pytest.mark.spark
def test_continuous_aggregate_having_retracts_and_a_global_group(spark):
    """GROUP BY without a window, micro-batch by micro-batch: one row per changed key, `_update` on a key's
    later rows, `_retract` when a key that went out fails HAVING; without GROUP BY one global row."""
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "job.sql").write_text(CONTINUOUS)
        c = check_file(Path(d) / "job.sql", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    assert [t.type for t in c.pipeline.transforms] == ["aggregate", "aggregate", "select"]
    ts = "2026-01-10T09:00:{:02d}Z"
    case = TestCase(name="continuous", ordered=True, batches=[
        {"inputs": {"src": [{"k": "a", "v": 4, "ts": ts.format(1)}, {"k": "a", "v": 7, "ts": ts.format(2)},
                            {"k": "b", "v": 3, "ts": ts.format(3)}]}},
        {"inputs": {"src": [{"k": "b", "v": 8, "ts": ts.format(4)}]}},
        {"inputs": {"src": [{"k": "a", "v": -5, "ts": ts.format(0)}]}},  # older, yet counted; a drops below 10
    ])
    res = run_case(c.plan, case, spark)
    assert res.ok, res.message
    rows = {k: [tuple(r.values()) for r in v] for k, v in res.captured.items() if k != "dead_letter"}
    assert rows["big"] == [("a", 2, 11, False, False), ("b", 2, 11, True, False), ("a", 3, 6, True, True)]
    # LAST_VALUE orders by event time: the event at :00 arrived last, but the newest is still v=8 (at :04)
    assert rows["everything"] == [(3, 3, False), (4, 8, True), (5, 8, True)]


EVERY = """\
CREATE TABLE src (k VARCHAR, v INT, ts TIMESTAMP) WITH (type = 'file', path = 'in');
CREATE TABLE o (k VARCHAR, n BIGINT, total BIGINT) WITH (type = 'file', path = 'o');
INSERT INTO o SELECT k, COUNT(*) AS n, SUM(v) AS total FROM src GROUP BY k
EMIT WITH DELAY '3' SECOND BEFORE WATERMARK;
"""


@pytest.mark.spark
def test_continuous_aggregate_emits_a_key_at_most_every_n(spark, tmp_path):
    """EMIT on a GROUP BY without a window (the aggregate's `every: 3s`): the query reading it runs a micro-batch
    every 3 s instead of the (test's) 100 ms, so two arrivals within those 3 s are one micro-batch and a gets one
    row for both, with its latest values; over three micro-batches, exact rows."""
    from etl.runtime import memory
    from etl.runtime.testing import _CaseRun
    from etl.spec.pipeline import TestCase

    (tmp_path / "job.sql").write_text(EVERY)
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    assert [(t.type, str(t.every)) for t in c.pipeline.transforms] == [("aggregate", "3s")]
    ts = "2026-01-10T09:00:00Z"
    steps = TestCase(name="every", batches=[
        {"inputs": {"src": [{"k": "a", "v": 1, "ts": ts}, {"k": "b", "v": 10, "ts": ts}]}},
        {"inputs": {"src": [{"k": "a", "v": 2, "ts": ts}]}},
        {"inputs": {"src": [{"k": "a", "v": 4, "ts": ts}, {"k": "c", "v": 5, "ts": ts}]}},
        {"inputs": {"src": [{"k": "b", "v": 1, "ts": ts}]}},
    ]).steps()
    captured: dict[str, list[dict]] = {}
    run = _CaseRun(c.plan, spark, str(tmp_path / "run"), captured, steps)
    run.start()
    try:
        run.feed(0, steps[0])
        # batches 1 and 2 arrive together, right after a micro-batch: the next one, 3 s later, reads both
        memory.write_feed(run.feed_dir, 1, {"src": (steps[1].inputs["src"], run.ddl["src"])})
        run.feed(2, steps[2])
        run.feed(3, steps[3])
        (stream,) = run.runner.streams
        stamps = [p["timestamp"] for p in stream.recentProgress if p["numInputRows"]]
    finally:
        run.stop()
    assert sorted(tuple(r.values()) for r in captured["o"]) == [
        ("a", 1, 1, False),  # micro-batch 1 (with b's first row)
        ("a", 3, 7, True),  # micro-batch 2: a's two changes, one row (no ("a", 2, 3, True)); c's first row
        ("b", 1, 10, False), ("b", 2, 11, True),  # micro-batch 3: b's change
        ("c", 1, 5, False)]
    from datetime import datetime

    t = [datetime.fromisoformat(x.replace("Z", "+00:00")).timestamp() for x in stamps]
    assert len(t) == 3 and all(b - a >= 2.9 for a, b in zip(t, t[1:], strict=False)), stamps  # 3 s apart (100 ms without EMIT)


EXPRESSIONS = """\
CREATE TABLE src (k VARCHAR, u VARCHAR, price DOUBLE, qty INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (type = 'file', path = 'in');
CREATE TABLE o (k VARCHAR, revenue DOUBLE, users BIGINT) WITH (type = 'file', path = 'o');
INSERT INTO o SELECT lower(k) AS k, SUM(price * qty) AS revenue, COUNT(DISTINCT lower(u)) FROM src GROUP BY lower(k);
"""


@pytest.mark.spark
def test_continuous_aggregate_over_expressions(spark, tmp_path):
    """GROUP BY lower(k), SUM(price * qty), COUNT(DISTINCT lower(u)): a derive computes them, then the aggregate."""
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    (tmp_path / "job.sql").write_text(EXPRESSIONS)
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    assert [t.type for t in c.pipeline.transforms] == ["derive", "aggregate", "select"]
    ts = "2026-01-10T09:00:00Z"
    rows = [{"k": "A", "u": "Ann", "price": 2.5, "qty": 4, "ts": ts}, {"k": "a", "u": "ann", "price": 1.0, "qty": 3, "ts": ts},
            {"k": "a", "u": "Bob", "price": 0.5, "qty": 2, "ts": ts}, {"k": "B", "u": "bob", "price": 9.0, "qty": 1, "ts": ts}]
    res = run_case(c.plan, TestCase(name="expressions", inputs={"src": rows}), spark)
    assert res.ok, res.message
    assert sorted(tuple(r.values()) for r in res.captured["o"]) == [("a", 14.0, 2, False), ("b", 9.0, 1, False)]


STATEMENTS = """\
CREATE TABLE src (id VARCHAR, customer VARCHAR, amount DOUBLE) WITH (type = 'file', path = 'in');
CREATE TABLE o (id VARCHAR, customer VARCHAR, amount DOUBLE) WITH (type = 'file', path = 'o');
CREATE TABLE big (id VARCHAR, amount DOUBLE) WITH (type = 'file', path = 'big');
BEGIN STATEMENT SET;
INSERT INTO o (amount, id) SELECT amount, id FROM src;
INSERT INTO big SELECT id, amount FROM src WHERE amount > 10;
END;
EXPLAIN PLAN FOR INSERT INTO big SELECT id, amount FROM src;
SELECT upper(customer) AS who FROM src;
"""


@pytest.mark.spark
def test_statements_on_spark(spark, tmp_path):
    """A statement set's INSERTs, one with a column list (customer NULL), an EXPLAIN that writes nothing and a bare
    SELECT on the console: the rows each sink gets."""
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    (tmp_path / "job.sql").write_text(STATEMENTS)
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    assert [(d.code, d.span.line) for d in c.report.sorted()] == [("W016", 5), ("W015", 8)]
    rows = [{"id": "x", "customer": "ann", "amount": 5.0}, {"id": "y", "customer": "bob", "amount": 20.0}]
    res = run_case(c.plan, TestCase(name="statements", inputs={"src": rows}), spark)
    assert res.ok, res.message
    got = {k: sorted(tuple(r.values()) for r in v) for k, v in res.captured.items() if k != "dead_letter"}
    assert got == {"o": [("x", None, 5.0), ("y", None, 20.0)], "big": [("y", 20.0)], "select": [("ANN",), ("BOB",)]}
