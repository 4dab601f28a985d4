"""Every window kind and aggregate, under both emit policies, against the pure-Python oracle.

Data: out-of-order, late and duplicate events in fixed micro-batches (tests/windows/data.py).
Native engine: lateness by the previous batch's watermark (Spark's rule); state engine:
by the current one (see etl/compile/windows/native.py). Both must equal the oracle exactly
(approx_count_distinct within 5% on the native engine, HyperLogLog++).

To stay within the CI budget, each engine/emit policy runs ONE streaming query: the
window variants below are computed side by side (a union of independent stateful
operators over the same source and watermark) and told apart by a `_variant` column.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from etl.compile.windows.aggregate import window_aggregate
from etl.components.transforms.window.spec import WindowTransform
from tests.windows import oracle
from tests.windows.data import make_batches
from tests.windows.harness import assert_rows_equal, et, run_to_end, stream

# no module-wide `spark` mark: tests/conftest.py marks each test that asks for `spark` (also through this
# module's fixtures); the checks of the data and the oracle alone run in the fast lane (no JVM)

DELAY_S = 4
AGGS = [
    {"fn": "count", "as": "n"},
    {"fn": "count", "field": "v", "as": "n_v"},
    {"fn": "sum", "field": "v", "as": "sum_v"},
    {"fn": "sum", "field": "x", "as": "sum_x"},
    {"fn": "avg", "field": "x", "as": "avg_x"},
    {"fn": "min", "field": "s", "as": "min_s"},
    {"fn": "max", "field": "v", "as": "max_v"},
    {"fn": "count_distinct", "field": "v", "as": "cd_v"},
    {"fn": "approx_count_distinct", "field": "s", "as": "acd_s"},
    {"fn": "collect_list", "field": "v", "as": "list_v"},
    {"fn": "collect_set", "field": "s", "as": "set_s"},
    {"fn": "first", "field": "v", "as": "first_v"},
    {"fn": "last", "field": "x", "as": "last_x"},
    {"fn": "top_n", "field": "v", "n": 3, "as": "top_v"},
]
SHAPES = {
    "tumbling": {"kind": "tumbling", "size": "10s"},
    "sliding": {"kind": "sliding", "size": "10s", "slide": "5s"},
    "session": {"kind": "session", "gap": "3s"},
    # Flink's CUMULATE with an offset longer than its step (etl.sql.window: its windows [7s, 12s), [7s, 17s), ...)
    "cumulating": {"kind": "cumulating", "size": "10s", "step": "5s", "offset": "7s"},
}
KINDS = list(SHAPES)
BATCHES = make_batches()
# having variants: (kind, SQL, the same condition in Python)
HAVING_NATIVE = ("sliding", "n >= 3 AND cd_v > 1", lambda r: r["n"] >= 3 and r["cd_v"] > 1)
# min_s only decreases: a provisional row can pass and the final one fail -> a _retract row
HAVING_EARLY = "min_s >= 'PUT' OR n = 2"


def having_early(r):
    return (r["min_s"] is not None and r["min_s"] >= "PUT") or r["n"] == 2


def make_spec(kind: str, **kw) -> WindowTransform:
    return WindowTransform.model_validate({"id": "w", "type": "window", "inputs": ["in"], **SHAPES[kind],
                                           "group_by": ["k"], "aggregates": AGGS, **kw})


def simulate(spec, rule, **kw):
    return oracle.simulate(BATCHES, spec, delay_ms=DELAY_S * 1000, rule=rule, **kw)


def run_variants(spark, tmp, variants: dict, *, part: str = "df") -> dict:
    """variants: name -> spec; one query computing all of them; returns name -> rows."""
    from pyspark.sql import functions as F

    src = stream(spark, BATCHES, tmp)
    frames = []
    for name, spec in variants.items():
        res = window_aggregate(src, spec, et(DELAY_S))
        frames.append(getattr(res, part).withColumn("_variant", F.lit(name)))
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    rows = run_to_end(spark, union, tmp)
    out: dict = {name: [] for name in variants}
    for r in rows:
        out[r.pop("_variant")].append(r)
    return out


def test_data_has_late_out_of_order_and_duplicates():
    flat = [e for b in BATCHES for e in b]
    assert len({json.dumps(e, sort_keys=True) for e in flat}) < len(flat)  # duplicates
    assert any(a["ts"] > b["ts"] for a, b in zip(flat, flat[1:], strict=False))  # out of order
    for kind in KINDS:
        for rule in ("previous", "current"):
            sim = simulate(make_spec(kind), rule)
            assert sim.late and len(sim.final) > 5


# ------------------------------------------------------------------ native engine
@pytest.fixture(scope="module")
def native_rows(spark, tmp_path_factory):
    variants = {k: make_spec(k) for k in KINDS}
    variants["having"] = make_spec(HAVING_NATIVE[0], having=HAVING_NATIVE[1])
    return run_variants(spark, tmp_path_factory.mktemp("native"), variants)


@pytest.mark.parametrize("kind", KINDS)
def test_native_final(native_rows, kind):
    assert_rows_equal(native_rows[kind], simulate(make_spec(kind), "previous").final, approx=("acd_s",))


def test_native_having(native_rows):
    kind, sql, fn = HAVING_NATIVE
    want = simulate(make_spec(kind, having=sql), "previous", having=fn).final
    assert 0 < len(want) < len(simulate(make_spec(kind), "previous").final)
    assert_rows_equal(native_rows["having"], want, approx=("acd_s",))


# ------------------------------------------------- state engine, final results only
@pytest.fixture(scope="module")
def dead_letter_rows(spark, tmp_path_factory):
    variants = {k: make_spec(k, emit={"late": "dead_letter"}) for k in KINDS}
    return run_variants(spark, tmp_path_factory.mktemp("dead"), variants, part="shared")


@pytest.mark.parametrize("kind", KINDS)
def test_state_final_and_late_to_dead_letters(dead_letter_rows, kind):
    want = simulate(make_spec(kind), "current")
    rows = dead_letter_rows[kind]
    results = [{k: v for k, v in r.items() if not k.startswith("_etl")} for r in rows if r["_etl_err"] is None]
    assert_rows_equal(results, want.final)
    late = []
    for r in rows:
        if r["_etl_err"] is not None:
            assert r["_etl_err"].startswith("late event")
            p = json.loads(r["_etl_payload"])
            late.append({k: p.get(k) for k in ("k", "v", "x", "s", "ts")})
    assert want.late
    assert_rows_equal(late, want.late)


# ------------------------------------------------ state engine, early + final results
EARLY_VARIANTS = {**{k: (k, None) for k in KINDS}, "having_tumbling": ("tumbling", HAVING_EARLY),
                  "having_session": ("session", HAVING_EARLY)}


def early_want(name):
    kind, having = EARLY_VARIANTS[name]
    return simulate(make_spec(kind), "current", early=True, having=having_early if having else None)


@pytest.fixture(scope="module")
def early_rows(spark, tmp_path_factory):
    variants = {name: make_spec(kind, emit={"early": "1ms"}, **({"having": h} if h else {}))
                for name, (kind, h) in EARLY_VARIANTS.items()}
    return run_variants(spark, tmp_path_factory.mktemp("early"), variants)


@pytest.mark.parametrize("name", list(EARLY_VARIANTS))
def test_state_early(early_rows, name):
    want = early_want(name)
    got = early_rows[name]
    if name.startswith("having"):
        assert any(r["_retract"] for r in want.final)
    else:
        assert len(want.provisional) > len(want.final) / 2
    assert_rows_equal([r for r in got if r["_final"]], want.final)
    assert_rows_equal([r for r in got if not r["_final"]], want.provisional)


def test_state_early_upsert_contract():
    """Read as upserts keyed by (window_start, window_end, k), the rows leave exactly the finals."""
    want = early_want("session")
    table: dict = {}
    for r in sorted(want.provisional + want.final, key=lambda r: r["_final"]):
        key = (r["window_start"], r["window_end"], r["k"])
        if r["_retract"]:
            table.pop(key, None)
        else:
            table[key] = r
    finals = {(r["window_start"], r["window_end"], r["k"]) for r in want.final}
    still_open = [k for k in table if k not in finals]
    assert all(start >= 100_000 for start, _, _ in still_open)  # the closing event's own session
    assert sorted(k for k in table if k in finals) == sorted(
        (r["window_start"], r["window_end"], r["k"]) for r in want.final if not r["_retract"])


def test_processing_time_windows(spark, tmp_path):
    """`time: processing`: events fall into the window of their micro-batch's time; a window closes
    once a later batch's time passes its end (watermark 0 on the processing-time column)."""
    from pyspark.sql import functions as F

    from tests.windows.harness import rows_of

    spec = WindowTransform.model_validate({"id": "w", "type": "window", "inputs": ["in"], "kind": "tumbling",
                                           "size": "1s", "time": "processing", "group_by": ["k"],
                                           "aggregates": [{"fn": "count", "as": "n"}]})
    batches = [[{"k": "a", "ts": 0}, {"k": "b", "ts": 0}], [{"k": "a", "ts": 0}], [{"k": "a", "ts": 0}],
               [{"k": "a", "ts": 0}]]
    res = window_aggregate(stream(spark, batches, tmp_path, schema="k string, ts bigint"), spec, None)
    assert res.engine == "native"
    q = (res.df.writeStream.format("memory").queryName("proc_time").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(processingTime="1500 milliseconds").start())
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    rows = rows_of(spark.table("proc_time").withColumn("k", F.col("k")))
    # The oracle from the batch times Spark recorded (offset log: batchTimestampMs, and the source offset saying
    # which input batch each micro-batch read). Batches are usually >= 1.5 s apart, but one that starts late
    # (a slow predecessor) can share a 1 s window with the next. Every window but the last batch's is closed.
    stamp: dict[int, int] = {}
    prev = 0
    for f in sorted((tmp_path / "ck" / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if not f.name.isdigit():
            continue
        lines = f.read_text().splitlines()
        offset = json.loads(lines[2])["batch"]
        for b in range(prev, offset):
            stamp[b] = json.loads(lines[1])["batchTimestampMs"]
        prev = max(prev, offset)
    assert sorted(stamp) == [0, 1, 2, 3]
    last = max(stamp.values())
    want = Counter((r["k"], stamp[i] - stamp[i] % 1000) for i, batch in enumerate(batches) for r in batch
                   if stamp[i] - stamp[i] % 1000 + 1000 <= last)
    assert sorted((r["k"], r["window_start"], r["n"]) for r in rows) == sorted((k, s, n) for (k, s), n in want.items())
    assert sum(want.values()) >= 3  # at least batches 0 and 1 (3 rows) are in closed windows
    assert all(r["window_end"] - r["window_start"] == 1000 for r in rows)
