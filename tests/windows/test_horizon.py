"""Event times beyond the horizon: an event dated 9999-12-31 and one dated +10000-01-01 among normal ones are
dead letters with their reason, never move the watermark (a normal event after them is not late), and
`--drain` writes every window it holds."""

from __future__ import annotations

import datetime
import json
from collections import defaultdict

import pytest

from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.testing import CaptureSink
from tests.spark.helpers import checked

pytestmark = pytest.mark.spark

PIPELINE = """
name: horizon
sources:
  - id: ev
    type: file
    path: in
    format: jsonl
    schema: {k: string, ts: timestamp}
    max_files_per_trigger: 1
    event_time: {field: ts, watermark: 1s}
transforms:
  - {id: counts, type: window, input: ev, kind: tumbling, size: 10s, group_by: [k], aggregates: [{fn: count, as: n}]}
sinks:
  - {id: out, type: print, input: counts}
"""
FILES = [  # read one per micro-batch, in name order (max_files_per_trigger: 1)
    ['{"k": "a", "ts": "2026-01-01T00:00:01Z"}', '{"k": "far", "ts": "9999-12-31T00:00:00Z"}',
     '{"k": "a", "ts": "2026-01-01T00:00:02Z"}', '{"k": "huge", "ts": "+10000-01-01T00:00:00Z"}'],
    ['{"k": "a", "ts": "2026-01-01T00:00:03Z"}', '{"k": "b", "ts": "2026-01-01T00:00:15Z"}'],  # late if 9999 counted
]


def test_events_beyond_the_horizon_are_dead_letters_and_drain_writes_every_window(spark, tmp_path):
    c = checked(tmp_path, PIPELINE)
    (tmp_path / "in").mkdir()
    for i, lines in enumerate(FILES):
        (tmp_path / "in" / f"{i}.jsonl").write_text("\n".join(lines) + "\n")
    rows: dict[str, list[dict]] = defaultdict(list)
    r = PipelineRun(c.plan, spark, RunOptions(drain=True, checkpoint=str(tmp_path / "ck"), progress="none",
                                              sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows[o.id])))
    r.start()
    r.wait()
    utc = datetime.UTC
    got = sorted((w["k"], w["window_start"].replace(tzinfo=w["window_start"].tzinfo or utc).isoformat(), w["n"])
                 for w in rows["out"])
    assert got == [("a", "2026-01-01T00:00:00+00:00", 3), ("b", "2026-01-01T00:00:10+00:00", 1)]
    dead = sorted(rows["dead_letter"], key=lambda d: d["payload"])
    assert [(d["stage"], d["reason"]) for d in dead] == [
        ("ev", "event time beyond the horizon: ts is after 9990-01-01T00:00:00Z")] * 2
    assert [json.loads(d["payload"]) for d in dead] == [{"k": "far", "ts": "9999-12-31T00:00:00.000Z"},
                                                       {"k": "huge", "ts": "+10000-01-01T00:00:00.000Z"}]


TRANSFORM_TIME = """
name: horizon-transform
sources:
  - {id: ev, type: file, path: in, format: jsonl, schema: {k: string, t: string}}
transforms:
  - {id: timed, type: derive, input: ev, columns: {ts: "to_timestamp(t)"}}
  - id: counts
    type: window
    input: timed
    kind: tumbling
    size: 10s
    group_by: [k]
    aggregates: [{fn: count, as: n}]
    event_time: {field: ts, watermark: 1s}
sinks:
  - {id: out, type: print, input: counts}
"""


def _started_drain(spark, tmp_path) -> tuple[PipelineRun, dict[str, list[dict]]]:
    """TRANSFORM_TIME started with --drain over an event of 2026 and one dated 9999-12-31; the rows each output
    got."""
    c = checked(tmp_path, TRANSFORM_TIME)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "0.jsonl").write_text('{"k": "a", "t": "2026-01-01T00:00:01Z"}\n'
                                             '{"k": "far", "t": "9999-12-31T00:00:00Z"}\n')
    rows: dict[str, list[dict]] = defaultdict(list)
    r = PipelineRun(c.plan, spark, RunOptions(drain=True, checkpoint=str(tmp_path / "ck"), progress="none",
                                              sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows[o.id])))
    r.start()
    return r, rows


def test_an_event_time_declared_on_a_transform_is_bounded_too(spark, tmp_path):
    """The window's own event time: the event dated 9999-12-31 is the window's dead letter (its input row as payload),
    never in its state, and the drain writes every window and is recorded."""
    r, rows = _started_drain(spark, tmp_path)
    r.wait()
    assert [q.name for q in r.queries] == ["ev", "counts"]  # as etl explain says (ev finds the rows beyond the horizon: bounded input)
    assert [(w["k"], w["n"]) for w in rows["out"]] == [("a", 1)]
    assert [(d["stage"], d["reason"], json.loads(d["payload"])) for d in rows["dead_letter"]] == [
        ("counts", "event time beyond the horizon: ts is after 9990-01-01T00:00:00Z",
         {"k": "far", "t": "9999-12-31T00:00:00Z", "ts": "9999-12-31T00:00:00.000Z"})]
    assert (tmp_path / "ck" / "_etl_drained.json").exists()


def test_a_drain_that_leaves_windows_in_state_says_which_and_fails(spark, tmp_path, monkeypatch):
    """The drain's check that it emptied the state: with a horizon past the drain sentinel's watermark (a window's
    state at 9999-12-31 outlives the drain), the drain writes the others, then fails at the window instead of
    recording the drain."""
    from etl.compile import watermark
    from etl.runtime.runner import RunFailed

    monkeypatch.setattr(watermark, "BOUNDED_HORIZON", "9999-12-31T23:59:59Z")
    r, rows = _started_drain(spark, tmp_path)
    with pytest.raises(RunFailed) as e:
        r.wait()
    d = e.value.failure.diagnostic()
    assert (d.code, d.span.line, d.span.col) == ("E401", 7, 5)
    assert d.message.startswith("window 'counts': the drain left 1 row(s) in the state of query ")
    assert [(w["k"], w["n"]) for w in rows["out"]] == [("a", 1)]
    assert not (tmp_path / "ck" / "_etl_drained.json").exists()
