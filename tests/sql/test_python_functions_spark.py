"""Python functions on Spark: the example twins' tests, and a function raising on a row (a dead letter, the stream
goes on)."""
import json
import time
from pathlib import Path

import pytest

from etl.check import check_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
@pytest.mark.parametrize("name", ["functions.sql", "functions.yaml"])
def test_example_functions_pass_their_tests(spark, name):
    """A scalar, a table and an aggregate function, exact rows, in the SQL script and its YAML twin."""
    from etl.runtime.testing import run_tests

    c = check_file(ROOT / "pipelines" / "sql" / name, programs=True)
    assert c.plan is not None and len(c.pipeline.tests) == 2
    results = run_tests(c, spark)
    assert [r.ok for r in results] == [True, True], "\n".join(r.message for r in results)


MODULE = '''\
from typing import Iterator

import pandas as pd


def fragile(v: pd.Series) -> float:
    if (v < 0).any():
        raise ValueError("a negative value")
    return float(v.max() - v.min())


def worded(v: pd.Series) -> float:
    return "many" if len(v) > 1 else float(v.sum())  # a str where a double is declared


def shout(s: str) -> str:
    if s == "boom":
        raise ValueError("cannot shout boom")
    return s.upper()


def chars(s: str) -> Iterator[tuple[str]]:
    if s == "bang":
        raise KeyError(s)
    for ch in s:
        yield (ch,)


def tally(s: str) -> int:
    return "many" if s == "boom" else len(s)  # a str where a bigint is declared


def label(s: str) -> str:
    return {"s": s} if s == "ab" else s  # a dict where a string is declared


def pairs(s: str):
    for i, ch in enumerate(s):
        if s == "ab":
            yield ch, i, "extra"  # three values for two columns
        else:
            yield ch, "x" if s == "bang" else i  # a str for the int column
'''

PIPELINE = '''\
name: raising
functions:
  - name: shout
    callable: "udfs:shout"
  - name: chars
    callable: "udfs:chars"
  - name: fragile
    callable: "udfs:fragile"
  - {name: tally, callable: "udfs:tally"}
  - {name: label, callable: "udfs:label"}
  - {name: pairs, callable: "udfs:pairs", kind: table, returns: "c string, i int"}
  - {name: worded, callable: "udfs:worded"}
sources:
  - {id: src, type: file, path: in, schema: {s: string, g: string, n: bigint, ts: timestamp},
     event_time: {field: ts, watermark: 0s}}
transforms:
  - id: loud
    type: derive
    inputs: [src]
    columns: {t: "shout(s)"}
  - id: rows
    type: derive
    inputs: [src]
    columns: {cs: "chars(s)"}
  - id: each
    type: select
    inputs: [rows]
    fields: [s, "INLINE(cs) AS (ch)"]
  - id: w
    type: window
    inputs: [src]
    kind: tumbling
    size: 1m
    group_by: [g]
    aggregates: [{fn: fragile, field: n, as: spread}]
  - id: typed
    type: derive
    inputs: [src]
    columns: {k: "tally(s)", l: "label(s)"}
  - id: pr
    type: derive
    inputs: [src]
    columns: {ps: "pairs(s)"}
  - id: prs
    type: select
    inputs: [pr]
    fields: [s, "INLINE(ps) AS (c, i)"]
  - {id: w2, type: window, inputs: [src], kind: tumbling, size: 1m, group_by: [g],
     aggregates: [{fn: worded, field: n, as: total}]}
sinks:
  - {id: out, type: file, path: o1, inputs: [loud]}
  - {id: out2, type: file, path: o2, inputs: [each]}
  - {id: out3, type: file, path: o3, inputs: [w]}
  - {id: out4, type: file, path: o4, inputs: [typed]}
  - {id: out5, type: file, path: o5, inputs: [prs]}
  - {id: out6, type: file, path: o6, inputs: [w2]}
'''


@pytest.mark.spark
def test_a_function_raising_on_a_row_sends_that_row_to_dead_letters(spark, tmp_path):
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    (tmp_path / "udfs.py").write_text(MODULE)
    (tmp_path / "p.yaml").write_text(PIPELINE)
    c = check_file(tmp_path / "p.yaml", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    rows = [{"s": "ab", "g": "a", "n": 1, "ts": "2026-01-10T09:00:01Z"},
            {"s": "boom", "g": "a", "n": 5, "ts": "2026-01-10T09:00:02Z"},
            {"s": "bang", "g": "b", "n": -1, "ts": "2026-01-10T09:00:03Z"},
            {"s": "", "g": "c", "n": 2, "ts": "2026-01-10T09:05:00Z"}]  # moves the watermark past 09:01
    res = run_case(c.plan, TestCase(name="raising", inputs={"src": rows}), spark)
    assert set(res.captured) == {"out", "out2", "out3", "out4", "out5", "out6", "dead_letter"}, res.message
    got = {k: sorted(tuple(map(str, r.values())) for r in v) for k, v in res.captured.items() if k != "dead_letter"}
    assert got["out3"] == [("a", "2026-01-10 09:00:00+00:00", "2026-01-10 09:01:00+00:00", "4.0")]
    assert got["out6"] == [("b", "2026-01-10 09:00:00+00:00", "2026-01-10 09:01:00+00:00", "-1.0")]
    got = {k: sorted(tuple(r[c] for c in ("s", "t", "ch", "k", "l", "c", "i") if c in r) for r in v)
           for k, v in res.captured.items() if k in ("out", "out2", "out4", "out5")}
    assert got == {"out": [("", ""), ("ab", "AB"), ("bang", "BANG")],
                   "out2": [("ab", "a"), ("ab", "b"), ("boom", "b"), ("boom", "m"), ("boom", "o"), ("boom", "o")],
                   "out4": [("", 0, ""), ("bang", 4, "bang")],  # wrongly typed returns: dead letters below
                   "out5": [("boom", "b", 0), ("boom", "m", 3), ("boom", "o", 1), ("boom", "o", 2)]}
    dead = sorted((d["stage"], d["reason"], json.loads(d["payload"])) for d in res.captured["dead_letter"])
    p = {"g": "b", "n": -1, "ts": "2026-01-10T09:00:03.000Z"}
    ab, boom = {"s": "ab", "g": "a", "n": 1, "ts": "2026-01-10T09:00:01.000Z"}, {"s": "boom", "g": "a", "n": 5,
                                                                                "ts": "2026-01-10T09:00:02.000Z"}
    pos = str(tmp_path / "p.yaml")
    raised = "USER_RAISED_EXCEPTION: python function"
    assert dead == [
        ("loud", f"{pos}:20:18: derive 'loud' column 't': USER_RAISED_EXCEPTION: python function 'shout' failed: "
                 "ValueError: cannot shout boom", {"s": "boom", "g": "a", "n": 5, "ts": "2026-01-10T09:00:02.000Z"}),
        ("pr", f"{pos}:43:19: derive 'pr' column 'ps': {raised} 'pairs' failed: row 1 ('a', 0, 'extra') has 3 "
               "value(s) where its declared columns are (c string, i int)", ab),
        ("pr", f"{pos}:43:19: derive 'pr' column 'ps': {raised} 'pairs' failed: row 1 ('b', 'x'): column 'i' is a "
               "str ('x') where its declared type is int", {"s": "bang", **p}),
        ("rows", f"{pos}:24:19: derive 'rows' column 'cs': USER_RAISED_EXCEPTION: python function 'chars' failed: "
                 "KeyError: 'bang'", {"s": "bang", **p}),
        ("typed", f"{pos}:39:18: derive 'typed' column 'k': {raised} 'tally' failed: returned a str ('many') "
                  "where its declared type is bigint", boom),
        ("typed", f"{pos}:39:33: derive 'typed' column 'l': {raised} 'label' failed: returned a dict ({{'s': 'ab'}}) "
                  "where its declared type is string", ab),
        ("w", "window [1768035600000, 1768035660000) ms: python function 'fragile' failed: ValueError: a negative "
              "value", {"g": "b", "window_start_ms": 1768035600000, "window_end_ms": 1768035660000}),
        ("w2", "window [1768035600000, 1768035660000) ms: python function 'worded' failed: returned a str ('many') "
               "where its declared type is double",
         {"g": "a", "window_start_ms": 1768035600000, "window_end_ms": 1768035660000}),
    ]


CONTINUOUS = '''\
name: continuous
functions: [{name: fragile, callable: "udfs:fragile"}]
sources: [{id: src, type: file, path: in, schema: {g: string, n: bigint}}]
transforms:
  - {id: per_g, type: aggregate, input: src, group_by: [g],
     aggregates: [{fn: fragile, field: n, as: spread}, {fn: count, as: rows}]}
sinks: [{id: out, type: file, path: o, inputs: [per_g]}]
'''


@pytest.mark.spark
def test_a_python_aggregate_in_a_continuous_aggregate(spark, tmp_path):
    """Per micro-batch one row per changed key, the function over all the key's values so far; a batch on which it
    raises for a key is that key's dead letter, and those rows stay out of the key's state (b's next row counts 2)."""
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    (tmp_path / "udfs.py").write_text(MODULE)
    (tmp_path / "p.yaml").write_text(CONTINUOUS)
    c = check_file(tmp_path / "p.yaml", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    reason = ("python function 'fragile' failed: ValueError: a negative value (the key's 2 row(s) of this "
              "micro-batch are left out of its state)")
    case = TestCase(name="udaf", batches=[
        {"inputs": {"src": [{"g": "a", "n": 1}, {"g": "a", "n": 5}, {"g": "b", "n": 2}]},
         "expect": {"out": [{"g": "a", "spread": 4.0, "rows": 2, "_update": False},
                            {"g": "b", "spread": 0.0, "rows": 1, "_update": False}]},
         "dead_letters": []},
        {"inputs": {"src": [{"g": "a", "n": 10}, {"g": "b", "n": -1}, {"g": "b", "n": 9}]},
         "expect": {"out": [{"g": "a", "spread": 9.0, "rows": 3, "_update": True}]},
         "dead_letters": [{"stage": "per_g", "reason": reason, "payload": '{"g": "b", "n": [-1, 9]}'}]},
        {"restart": True, "inputs": {"src": [{"g": "b", "n": 7}, {"g": "c", "n": 3}]},
         "expect": {"out": [{"g": "b", "spread": 5.0, "rows": 2, "_update": True},
                            {"g": "c", "spread": 0.0, "rows": 1, "_update": False}]},
         "dead_letters": []},
    ])
    res = run_case(c.plan, case, spark)
    assert res.ok, res.message


BOUNDED = '''\
import time

import pandas as pd


def spread(v: pd.Series) -> float:
    return float(v.max() - v.min())


def hang(v: pd.Series) -> float:
    time.sleep(120)  # (a test that hung would wait this long)
    return 0.0


def hungry(v: pd.Series) -> float:
    return float(len(bytearray(6 << 30)))  # 6 GB: over the worker's memory limit (2 GB more than it had)
'''


@pytest.mark.spark
def test_a_batch_group_by_calls_an_aggregate_function_within_its_bounds(spark, tmp_path, monkeypatch):
    """The pandas aggregate UDF a batch group-by calls (etl.compile.functions.register) goes through the bounds of
    every call (RowCall): a call past ETL_FUNCTION_TIMEOUT_S or over the worker's memory fails the job naming the
    function and the bound, within the budget, and the next job's calls run."""
    from pyspark.sql import functions as F

    from etl import settings
    from etl.compile.functions import register

    monkeypatch.setenv("ETL_FUNCTION_TIMEOUT_S", "1")
    # the setting's floor: pyarrow's first arena (~1 GB of address space) is mapped before the limit is measured
    # (etl.compile.bounds._map_arrow); at 1024 Arrow failed, "malloc of size 64 failed", on every call
    monkeypatch.setenv("ETL_FUNCTION_MEMORY_MB", "256")
    settings.reset()
    (tmp_path / "udfs.py").write_text(BOUNDED)
    (tmp_path / "p.yaml").write_text(
        "name: bounded\nfunctions:\n" + "".join(f"  - {{name: {f}, callable: \"udfs:{f}\"}}\n"
                                                 for f in ("spread", "hang", "hungry"))
        + "sources: [{id: src, type: file, path: in, schema: {g: string, v: double}}]\n"
          "transforms:\n  - {id: w, type: aggregate, input: src, group_by: [g], aggregates: [{fn: spread, field: v, "
          "as: s}, {fn: hang, field: v, as: h}, {fn: hungry, field: v, as: m}]}\n"
          "sinks: [{id: out, type: file, path: o, inputs: [w]}]\n")
    c = check_file(tmp_path / "p.yaml", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    register(spark, c.plan.graph)
    settings.reset()
    df = spark.createDataFrame([("a", 1.0), ("a", 4.0)], "g string, v double").coalesce(1)

    def spread() -> list:
        return df.groupBy("g").agg(F.call_function("spread", F.col("v")).alias("s")).collect()

    assert spread() == [("a", 3.0)]
    for fn, reason in (("hang", "did not return within 1 s (ETL_FUNCTION_TIMEOUT_S)"),
                       ("hungry", "MemoryError (more memory than its worker may have: ETL_FUNCTION_MEMORY_MB=256)")):
        t = time.monotonic()
        with pytest.raises(Exception) as e:
            df.groupBy("g").agg(F.call_function(fn, F.col("v"))).collect()
        assert str(e.value).splitlines()[-1] == (f"etl.compile.windows.state.AggregateFailed: python function '{fn}' "
                                                 f"failed: {reason}")
        assert time.monotonic() - t < 20
        if fn == "hang":
            assert spread() == [("a", 3.0)]  # the next job's call runs
