"""`etl run --drain`: the input is complete, every open window, session and dedupe state is flushed.

One pipeline (a seeded generator of 1,000 events in 4 micro-batches) with a tumbling count and a
session window on both window engines (native Spark aggregation; the transformWithState engine,
chosen by `emit.late: dead_letter`) and a dedupe, run through the real runtime (PipelineRun):
`--once` leaves the last windows in state, `--drain` on the same checkpoint writes exactly what the
oracle closes when the watermark passes everything; a third run on the drained checkpoint is refused (E408).
"""

from __future__ import annotations

import datetime
from collections import defaultdict

import pytest

from etl.compile.context import CompileError
from etl.components.sources.generator.reader import generate, spec_options
from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.testing import CaptureSink
from etl.components.transforms.window.spec import WindowTransform
from tests.spark.helpers import checked
from tests.windows import oracle
from tests.windows.harness import assert_rows_equal

pytestmark = pytest.mark.spark

N, PER_BATCH, DELAY_MS = 1000, 250, 2000
PIPELINE = """
name: drain-test
sources:
  - id: gen
    type: generator
    count: 1000
    rate: 100
    seed: 3
    rows_per_batch: 250
    start_time: "2026-01-01T00:00:00Z"
    fields:
      id: {sequence: 0}
      ts: {timestamp: event}
      k: {choice: [a, b, c, d], weights: [90, 5, 4, 1]}
    event_time: {field: ts, watermark: 2s}
transforms:
  - {id: kept, type: filter, input: gen, expr: "k <> 'z'"}  # pushed below the watermark, it would drop the sentinel
  - {id: tumbling, type: window, input: kept, kind: tumbling, size: 3s, group_by: [k], aggregates: [{fn: count, as: n}]}
  - {id: session, type: window, input: gen, kind: session, gap: 300ms, group_by: [k], aggregates: [{fn: count, as: n}]}
  - {id: tumbling_state, type: window, input: gen, kind: tumbling, size: 3s, group_by: [k],
     aggregates: [{fn: count, as: n}], emit: {late: dead_letter}}
  - {id: session_state, type: window, input: gen, kind: session, gap: 300ms, group_by: [k],
     aggregates: [{fn: count, as: n}], emit: {late: dead_letter}}
  - {id: uids, type: derive, input: gen, columns: {uid: "id div 3"}}
  - {id: unique, type: dedupe, input: uids, keys: [uid]}
sinks:
  - {id: tumbling_out, type: print, input: tumbling}
  - {id: session_out, type: print, input: session}
  - {id: tumbling_state_out, type: print, input: tumbling_state}
  - {id: session_state_out, type: print, input: session_state}
  - {id: unique_out, type: print, input: unique}
"""
WINDOWS = {"tumbling": ("tumbling", "previous"), "session": ("session", "previous"),
           "tumbling_state": ("tumbling", "current"), "session_state": ("session", "current")}


def events() -> list[dict]:
    c = checked_spec()
    rows = generate(spec_options(c), 0, N).to_pylist()
    return [{"k": r["k"], "id": r["id"], "ts": int(r["ts"].timestamp() * 1000)} for r in rows]


def checked_spec():
    from etl.components.sources.generator.spec import GeneratorSource
    import yaml

    doc = yaml.safe_load(PIPELINE)["sources"][0]
    return GeneratorSource.model_validate(doc)


def window_spec(kind: str) -> WindowTransform:
    shape = {"size": "3s"} if kind == "tumbling" else {"gap": "300ms"}
    return WindowTransform.model_validate({"id": "w", "type": "window", "inputs": ["gen"], "kind": kind, **shape,
                                           "group_by": ["k"], "aggregates": [{"fn": "count", "as": "n"}]})


def run(spark, plan, checkpoint, *, once=False, drain=False) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = defaultdict(list)
    r = PipelineRun(plan, spark, RunOptions(once=once, drain=drain, checkpoint=str(checkpoint), progress="none",
                                            sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows[o.id])))
    r.start()
    r.wait()
    return rows


def ms_rows(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        out.append({k: int(v.replace(tzinfo=v.tzinfo or datetime.UTC).timestamp() * 1000)
                    if isinstance(v, datetime.datetime) else v for k, v in r.items()})
    return out


def test_once_then_drain_then_refused(spark, tmp_path):
    c = checked(tmp_path, PIPELINE)
    evs = events()
    batches = [evs[i:i + PER_BATCH] for i in range(0, N, PER_BATCH)]
    ck = tmp_path / "ck"

    once = run(spark, c.plan, ck, once=True)
    drained = run(spark, c.plan, ck, drain=True)
    for name, (kind, rule) in WINDOWS.items():
        want_once = oracle.simulate(batches, window_spec(kind), delay_ms=DELAY_MS, rule=rule).final
        want_all = oracle.simulate(batches, window_spec(kind), delay_ms=DELAY_MS, rule=rule, drain=True).final
        assert len(want_all) > len(want_once)
        assert_rows_equal(ms_rows(once[f"{name}_out"]), want_once)
        got = ms_rows(once[f"{name}_out"] + drained[f"{name}_out"])
        assert_rows_equal(got, want_all)
        assert sum(r["n"] for r in got) == N  # every event counted once
    missing = N - sum(r["n"] for r in once["tumbling_out"])
    assert missing == 400  # the README's example: windows [6 s, 9 s) and [9 s, 12 s) are still open after --once
    # dedupe: each uid once, whether it came out in the --once run or the drain (nothing is lost or repeated)
    uids = [r["uid"] for r in once["unique_out"] + drained["unique_out"]]
    assert sorted(uids) == list(range((N + 2) // 3))

    with pytest.raises(CompileError) as e:
        run(spark, c.plan, ck, once=True)
    assert e.value.code == "E408" and "was drained (etl run --drain" in e.value.message
    assert e.value.node.id == "session"  # the first stateful node of the graph


RUNNING = """
name: drain-running
sources:
  - id: gen
    type: generator
    count: 600
    rate: 100
    seed: 5
    rows_per_batch: 200
    start_time: "2026-01-01T00:00:00Z"
    fields:
      ts: {timestamp: event}
      k: {choice: [a, b, c, d], weights: [90, 5, 4, 1]}
    event_time: {field: ts, watermark: 2s}
transforms:
  - {id: session_state, type: window, input: gen, kind: session, gap: 300ms, group_by: [k],
     aggregates: [{fn: count, as: n}], emit: {late: dead_letter}}
sinks:
  - {id: out, type: print, input: session_state}
trigger: {mode: interval, interval: 200ms}
"""


def test_drain_a_running_pipeline(spark, tmp_path):
    """`etl drain` (a request file in the checkpoint) stops a continuous run after its batch in flight, drains it
    and lets it exit: every session is written, the drain is recorded."""
    import threading
    import time

    from etl.compile import drain

    c = checked(tmp_path, RUNNING)
    ck = tmp_path / "ck"
    rows: list[dict] = []
    r = PipelineRun(c.plan, spark, RunOptions(checkpoint=str(ck), progress="none",
                                              sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows)))
    r.start()
    waiter = threading.Thread(target=r.wait)
    waiter.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (ck / "session_state" / "commits" / "2").exists():
        time.sleep(0.2)  # batches 0..2 hold the 600 events; later batches are empty
    assert waiter.is_alive()  # a continuous run does not end by itself
    drain.request(str(ck))
    waiter.join(240)
    assert not waiter.is_alive()
    assert drain.drained(str(ck))["how"] == "etl drain" and not drain.requested(str(ck))
    gen = c.plan.graph.node("gen").spec
    evs = [{"k": e["k"], "ts": int(e["ts"].timestamp() * 1000)} for e in generate(spec_options(gen), 0, 600).to_pylist()]
    want = oracle.simulate([evs[i:i + 200] for i in range(0, 600, 200)], window_spec("session"), delay_ms=DELAY_MS,
                           rule="current", drain=True).final
    assert_rows_equal(ms_rows(rows), want)
    assert sum(x["n"] for x in rows) == 600


JOIN = """
name: drain-join
sources:
  - id: left
    type: generator
    count: 200
    rate: 20
    seed: 1
    rows_per_batch: 100
    start_time: "2026-01-01T00:00:00Z"
    fields: {id: {sequence: 0}, k: {choice: [a, b]}, ts: {timestamp: event}}
    event_time: {field: ts, watermark: 2s}
  - id: right
    type: generator
    count: 20
    rate: 2
    seed: 2
    start_time: "2026-01-01T00:00:00Z"
    fields: {k: {choice: [c]}, v: {int_range: [1, 9]}, ts: {timestamp: event}}
    event_time: {field: ts, watermark: 2s}
transforms:
  - {id: j, type: join, inputs: [left, right], on: [k], how: left, within: 1s}
sinks:
  - {id: out, type: print, input: j}
"""


def test_drain_flushes_stream_join_buffers(spark, tmp_path):
    """A left outer join writes a left row without a match only once the watermark says none can come: `--once`
    keeps the last ones buffered, `--drain` writes them all."""
    c = checked(tmp_path, JOIN)
    once = run(spark, c.plan, tmp_path / "ck", once=True)["out"]
    drained = run(spark, c.plan, tmp_path / "ck", drain=True)["out"]
    assert 0 < len(once) < 200
    assert sorted(r["id"] for r in once + drained) == list(range(200))
    assert all(r["v"] is None for r in once + drained)
