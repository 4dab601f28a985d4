"""Late firing: `emit: {late: update, allowed_lateness: 10s}` against tests/windows/oracle_late.py.

Out-of-order, late and duplicate events in fixed micro-batches (tests/windows/data.py), fed one
batch per trigger: every window kind (and `having`, whose failing updates retract) in ONE query,
told apart by `_variant`. Events within the allowed lateness update their closed window (rows
flagged `_update`, keyed by group, window_start, window_end); later ones go to dead letters.
Also: the columns the graph knows for such windows (and for `emit.early`) are the ones Spark produces.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from etl.compile.windows.native import WindowError
from tests.windows.harness import assert_rows_equal
from tests.windows.oracle_late import simulate_updates
from tests.windows.test_window_oracle import BATCHES, DELAY_S, HAVING_EARLY, having_early, make_spec, run_variants

# no module-wide `spark` mark: tests/conftest.py marks each test that asks for `spark` (also through this
# module's fixtures); the checks of the data and the oracle alone run in the fast lane (no JVM)

LATENESS_S = 10
EMIT = {"late": "update", "allowed_lateness": f"{LATENESS_S}s", "too_late": "dead_letter"}
VARIANTS = {"tumbling": ("tumbling", None), "sliding": ("sliding", None), "session": ("session", None),
            "having_tumbling": ("tumbling", HAVING_EARLY), "having_session": ("session", HAVING_EARLY)}


def want(name):
    kind, having = VARIANTS[name]
    return simulate_updates(BATCHES, make_spec(kind), delay_ms=DELAY_S * 1000, lateness_ms=LATENESS_S * 1000,
                            having=having_early if having else None)


@pytest.fixture(scope="module")
def update_rows(spark, tmp_path_factory):
    variants = {name: make_spec(kind, emit=EMIT, **({"having": h} if h else {})) for name, (kind, h) in VARIANTS.items()}
    return run_variants(spark, tmp_path_factory.mktemp("late_update"), variants, part="shared")


@pytest.mark.parametrize("name", list(VARIANTS))
def test_late_update(update_rows, name):
    w = want(name)
    rows = update_rows[name]
    results = [{k: v for k, v in r.items() if not k.startswith("_etl")} for r in rows if r["_etl_err"] is None]
    assert any(r["_update"] for r in w.final)  # the data has events within the allowed lateness...
    assert w.late  # ... and beyond it
    if name.startswith("having"):
        assert any(r["_retract"] for r in w.final)
    assert_rows_equal(results, w.final)
    late = []
    for r in rows:
        if r["_etl_err"] is not None:
            assert r["_etl_err"].startswith("late event") and "allowed lateness 10000 ms" in r["_etl_err"]
            p = json.loads(r["_etl_payload"])
            late.append({k: p.get(k) for k in ("k", "v", "x", "s", "ts")})
    assert_rows_equal(late, w.late)


def test_updates_read_as_upserts_leave_the_windows_of_all_events_in_time():
    """Upserted by (k, window_start, window_end), the rows of a tumbling window leave, per window, the aggregate of
    every event that came within the allowed lateness."""
    from tests.windows import oracle

    w = want("tumbling")
    table: dict = {}
    for r in w.final:
        table[(r["k"], r["window_start"], r["window_end"])] = r
    from collections import Counter

    too_late = Counter(json.dumps(e, sort_keys=True) for e in w.late)
    kept = []
    for e in (e for b in BATCHES for e in b):
        j = json.dumps(e, sort_keys=True)
        if too_late[j]:
            too_late[j] -= 1
        else:
            kept.append(e)
    expect = oracle.simulate([kept], make_spec("tumbling"), delay_ms=0, rule="current", drain=True).final
    last = max(e["ts"] for e in kept)  # the closing event's own window stays open
    assert sorted((r["k"], r["window_start"], r["n"]) for r in table.values()) == \
        sorted((r["k"], r["window_start"], r["n"]) for r in expect if r["window_end"] <= last)
    assert sum(1 for r in w.final if r["_update"]) >= 3


WINDOW_PIPE = """
name: cols
sources:
  - id: gen
    type: generator
    count: 10
    fields: {ts: {timestamp: event}, k: {choice: [a, b]}, v: {int_range: [1, 9]}}
    event_time: {field: ts, watermark: 2s}
transforms:
  - id: early
    type: window
    input: gen
    kind: tumbling
    size: 1s
    group_by: [k]
    aggregates: [{fn: count_distinct, field: v, as: n}]
    emit: {early: 1s}
  - id: late
    type: window
    input: gen
    kind: session
    gap: 1s
    group_by: [k]
    aggregates: [{fn: count_distinct, field: v, as: n}, {fn: sum, field: v, as: s}]
    emit: {late: update, allowed_lateness: 1m, every: 10s}
  - {id: finals, type: filter, input: late, expr: "_final AND NOT _update"}
sinks:
  - {id: a, type: print, input: early}
  - {id: b, type: print, input: finals}
"""


def test_graph_columns_are_the_columns_spark_produces(spark, tmp_path):
    from etl.compile import CompileContext, Compiler
    from tests.spark.helpers import checked

    c = checked(tmp_path, WINDOW_PIPE)
    compiler = Compiler(CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan))
    for node in ("early", "late"):
        df = compiler.stream(node).out
        assert list(dict(c.plan.graph.columns_of(node))) == df.columns
        assert dict(c.plan.graph.columns_of(node)) == dict(df.dtypes)
    assert list(dict(c.plan.graph.columns_of("late")))[-3:] == ["_final", "_retract", "_update"]


IDLE = """
name: idle
sources:
  - id: in
    type: file
    path: in
    format: jsonl
    schema: {k: string, ts: bigint}
    event_time: {field: ts, watermark: 1s}
transforms:
  - {id: w, type: window, input: in, kind: tumbling, size: 1m, group_by: [k], aggregates: [{fn: count, as: n}],
     emit: {early: 15s, timers: TIMERS}}
sinks:
  - {id: out, type: print, input: w}
trigger: {mode: interval, interval: 1s}
"""
# 1 s: a run with processing-time timers runs a no-data batch per trigger while it waits out `early` (15 s), each
# calling the window's Python processor; the held-back row still goes out within 1 s of the timer


def _idle_run(spark, tmp_path, timers):
    """A continuous run of IDLE (timers: processing or event) over two fixed batches, rows captured; not started."""
    from etl.runtime.runner import PipelineRun, RunOptions
    from etl.runtime.testing import CaptureSink
    from tests.spark.helpers import checked
    from tests.windows.batches_source import write_batches

    tmp_path.mkdir()
    c = checked(tmp_path, IDLE.replace("TIMERS", timers).replace("name: idle", f"name: idle_{timers}"))
    # an empty batch first: the query's first batch (planning, code generation, Python workers) can take longer
    # than `early` on a loaded machine, and the two batches with rows must come within `early` of each other
    write_batches(tmp_path / "b.json", [[], [{"k": "a", "ts": 1000}, {"k": "a", "ts": 2000}], [{"k": "a", "ts": 3000}]])

    def source(ctx, node):
        from etl.compile.watermark import with_event_time

        df = (spark.readStream.format("etl_test_batches").option("path", str(tmp_path / "b.json"))
              .option("schema", "k string, ts bigint").load())
        return with_event_time(df, node, node.spec.event_time)

    rows: list[dict] = []
    run = PipelineRun(c.plan, spark, RunOptions(checkpoint=str(tmp_path / "ck"), progress="none",
                                                sources={"in": source},
                                                sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows)))
    return run, rows


def test_early_row_of_an_idle_key_on_processing_time(spark, tmp_path):
    """Batch 1 gives key a its first provisional row at once; batch 2 (a moment later) changes it, held back by
    `early: 15s`; then no more input. With processing-time timers the held-back row goes out within `early` of wall
    clock; with event-time timers it waits for the watermark, which no longer moves. (Both runs go side by side:
    their waits overlap.)"""
    import threading
    import time

    runs = {timers: _idle_run(spark, tmp_path / timers, timers) for timers in ("processing", "event")}
    waiters = []
    try:
        for run, _ in runs.values():
            run.start()
            waiters.append(threading.Thread(target=run.wait))
            waiters[-1].start()
        deadline = time.monotonic() + 180
        first_seen: dict[str, float] = {}
        first: dict[str, list] = {}
        while time.monotonic() < deadline and len(first) < len(runs):
            for timers, (run, rows) in runs.items():
                if timers in first:
                    continue
                if rows and timers not in first_seen:
                    first_seen[timers] = time.monotonic()
                # `early` is 15 s; the rest is slack for a loaded machine
                if timers in first_seen and ([x for x in rows if x["n"] == 3]
                                             or time.monotonic() > first_seen[timers] + 25):
                    first[timers] = [x["n"] for x in rows]
                    run.request_stop()  # done: its batches (every 200 ms) no longer load the other run
            time.sleep(0.1)
    finally:
        for run, _ in runs.values():
            run.request_stop()
        for w in waiters:
            w.join(120)
    got = {timers: [(x["n"], x["_final"]) for x in rows] for timers, (_, rows) in runs.items()}
    assert set(first) == set(runs), got  # each run's first row came
    assert first["processing"][0] == 2 and got["processing"] == [(2, False), (3, False)]
    assert got["event"] == [(2, False)]


def test_processing_timers_refused_by_available_now_runs(spark, tmp_path):
    from etl.compile.context import CompileError
    from etl.runtime.runner import PipelineRun, RunOptions
    from tests.spark.helpers import checked

    c = checked(tmp_path, IDLE.replace("TIMERS", "processing"))
    (tmp_path / "in").mkdir()
    for opts in ({"once": True}, {"drain": True}):
        r = PipelineRun(c.plan, spark, RunOptions(checkpoint=str(tmp_path / "ck"), progress="none", **opts))
        try:
            r.start()
            raise AssertionError("not refused")
        except CompileError as e:
            assert e.code == "E400" and e.field == "emit" and "needs a continuous run" in e.message
        finally:
            r.close()


def test_state_engine_refuses_a_complex_aggregate_field_with_e404(tmp_path):
    """validate says it at the aggregate's field (the column's type is known there); the compiler keeps its own check
    for a type validate cannot tell."""
    from etl.check import check_file
    from etl.compile.windows.state import accumulator_inputs
    from etl.components.transforms.window.spec import Aggregate

    pipe = WINDOW_PIPE.replace("  - id: early\n", "  - {id: arr, type: derive, input: gen, columns: {vs: \"array(v)\"}}\n"
                                                  "  - id: early\n", 1)
    pipe = pipe.replace("input: gen\n    kind: tumbling", "input: arr\n    kind: tumbling", 1)
    pipe = pipe.replace("aggregates: [{fn: count_distinct, field: v, as: n}]\n    emit: {early: 1s}",
                        "aggregates: [{fn: max, field: vs, as: n}]\n    emit: {early: 1s}", 1)
    f = tmp_path / "p.yaml"
    f.write_text(textwrap.dedent(pipe))
    errors = [(d.code, d.span.line, d.span.col, d.message) for d in check_file(f).report.sorted() if d.is_error]
    assert errors == [("E404", 17, 35, "window 'early': aggregate max over 'vs' (array<bigint>): with early emission, "
                       "late dead letters or Python aggregates, aggregate fields must be top-level numbers, strings, "
                       "booleans or timestamps")]
    with pytest.raises(WindowError) as e:
        accumulator_inputs({"vs": "array<bigint>"}, [Aggregate(fn="max", field="vs", **{"as": "n"})], "why")
    assert e.value.code == "E404" and "aggregate max over 'vs' (array<bigint>): why" in str(e.value)
