"""`etl test` with `batches:`: micro-batches one after the other, rows per batch, watermark, late events, restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl.check import check_file
from etl.runtime.testing import run_tests

WINDOW = """\
name: mb
sources:
  - id: calls
    type: file
    path: in
    format: jsonl
    schema: {ts: timestamp, endpoint: string}
    event_time: {field: ts, watermark: 10s}
transforms:
  - id: per_minute
    type: window
    input: calls
    kind: tumbling
    size: 1m
    group_by: [endpoint]
    aggregates: [{fn: count, as: calls}]
    emit: {late: LATE}
sinks:
  - {id: out, type: file, input: per_minute, path: out}
tests:
"""

CASE = """\
  - name: NAME
    batches:
      - inputs:
          calls:
            - {ts: "2026-01-10T09:00:01Z", endpoint: /a}
            - {ts: "2026-01-10T09:00:30Z", endpoint: /a}
        watermark: "2026-01-10T09:00:20Z"
        expect: {out: []}
      - inputs:
          calls: [{ts: "2026-01-10T09:01:20Z", endpoint: /a}]
        watermark: "2026-01-10T09:01:10Z"
        expect:
          out: [{endpoint: /a, window_start: "2026-01-10T09:00:00Z", calls: 2}]
      - inputs:
          calls:
            - {ts: "2026-01-10T09:00:40Z", endpoint: /a}
            - {ts: "2026-01-10T09:01:05Z", endpoint: /a}
        expect: {out: []}
        dead_letters: DEAD
      - restart: RESTART
        inputs:
          calls: [{ts: "2026-01-10T09:02:30Z", endpoint: /a}]
        watermark: "2026-01-10T09:02:20Z"
        expect:
          out: [{endpoint: /a, window_start: "2026-01-10T09:01:00Z", calls: 2}]
    expect:
      out:
        - {endpoint: /a, window_start: "2026-01-10T09:00:00Z", calls: 2}
        - {endpoint: /a, window_start: "2026-01-10T09:01:00Z", calls: 2}
"""


def _results(spark, tmp_path: Path, text: str):
    p = tmp_path / "p.yaml"
    p.write_text(text)
    c = check_file(p, programs=True)
    assert c.plan is not None, "\n".join(d.render() for d in c.report.sorted())
    return run_tests(c, spark)


@pytest.mark.spark
@pytest.mark.parametrize("late,dead,restart", [
    ("drop", "[]", "false"),
    ("dead_letter", "[{stage: per_minute}]", "true"),
])
def test_late_event_dropped_or_dead_letter_and_window_state_kept_per_batch(spark, tmp_path, late, dead, restart):
    # batch 3's 09:00:40 is behind the watermark (09:01:10) of a closed window: dropped, or one dead letter; its
    # 09:01:05 is on time and counted when batch 4 closes the window, also after a restart from the checkpoint
    text = WINDOW.replace("LATE", late) + CASE.replace("NAME", f"late {late}").replace("DEAD", dead) \
        .replace("RESTART", restart)
    (res,) = _results(spark, tmp_path, text)
    assert res.ok, res.message
    assert [r["calls"] for r in res.captured["out"]] == [2, 2]
    assert len(res.captured.get("dead_letter", [])) == (1 if late == "dead_letter" else 0)


@pytest.mark.spark
def test_a_wrong_batch_expectation_names_the_batch_and_the_watermark(spark, tmp_path):
    case = CASE.replace("NAME", "wrong").replace("DEAD", "[]").replace("RESTART", "false") \
        .replace('watermark: "2026-01-10T09:01:10Z"', 'watermark: "2026-01-10T09:01:11Z"') \
        .replace("        expect: {out: []}\n        dead_letters", "        expect: {out: [{calls: 9}]}\n"
                 "        dead_letters")
    (res,) = _results(spark, tmp_path, WINDOW.replace("LATE", "drop") + case)
    assert not res.ok
    assert res.message.splitlines() == [
        "batch 2 of 4: watermark: expected 2026-01-10T09:01:11Z, got 2026-01-10T09:01:10Z",
        "batch 3 of 4: sink 'out': expected 1 rows, got 0",
        '  - {"calls": 9}',
    ]


@pytest.mark.spark
def test_advance_waits_processing_time_out(spark, tmp_path):
    text = WINDOW.replace("LATE", "drop") + """\
  - name: advance
    batches:
      - inputs: {calls: [{ts: "2026-01-10T09:00:01Z", endpoint: /a}]}
      - advance: 2s
        inputs: {calls: [{ts: "2026-01-10T09:05:00Z", endpoint: /a}]}
        expect: {out: [{endpoint: /a, calls: 1}]}
"""
    (res,) = _results(spark, tmp_path, text)
    assert res.ok, res.message
    assert res.seconds >= 2.0
