"""Late events of both window engines (etl.physical.lateness) with files arriving back to back: two files, one
micro-batch each (max_files_per_trigger: 1) and no micro-batch between them, read by one `etl run --once`. The first
moves the watermark to 00:00:11 (00:00:12 minus 1 s), which closes the window [00:00:00, 00:00:10); the second
brings an event at 00:00:05 for that window. The native engine (Spark's aggregation) compares it with the previous
micro-batch's watermark (the epoch) and counts it in the window it closes in the same micro-batch (Spark's rule,
kept: see etl.physical.lateness); the state engine compares it with the current one, drops it from the window
and dead-letters it (`emit: {late: dead_letter}`, Flink's rule)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.spark.helpers import checked
from tests.spark.test_physical_run import run_once

pytestmark = pytest.mark.spark

WINDOW = ("{{id: {id}, type: window, input: src, kind: tumbling, size: 10s, "
          "aggregates: [{{fn: count, as: n}}, {{fn: collect_list, field: k, as: ks}}]{emit}}}")
PIPELINE = f"""\
name: late
sources:
  - {{id: src, type: file, path: input, format: jsonl, max_files_per_trigger: 1, schema: {{ts: timestamp, k: string}},
     event_time: {{field: ts, watermark: 1s}}}}
transforms:
  - {WINDOW.format(id="native", emit="")}
  - {WINDOW.format(id="state", emit=", emit: {late: dead_letter}")}
sinks:
  - {{id: native_out, type: file, input: native, path: native_out}}
  - {{id: state_out, type: file, input: state, path: state_out}}
checkpoint: state
"""
FILES = {"a.jsonl": [("2026-01-10T00:00:01Z", "a"), ("2026-01-10T00:00:12Z", "b")],
         "b.jsonl": [("2026-01-10T00:00:05Z", "late"), ("2026-01-10T00:00:13Z", "c")]}


def _lines(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*")) for x in f.read_text().splitlines()]


def test_an_event_behind_the_current_watermark_native_counts_it_state_dead_letters_it(spark, tmp_path):
    (tmp_path / "input").mkdir()
    for i, (name, rows) in enumerate(FILES.items()):  # read in modification-time order: a, then b
        f = tmp_path / "input" / name
        f.write_text("".join(json.dumps({"ts": ts, "k": k}) + "\n" for ts, k in rows))
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))
    run = run_once(spark, checked(tmp_path, PIPELINE).plan, tmp_path / "state")
    assert (run.physical.engine("native", "window"), run.physical.engine("state", "window")) == ("native", "state")
    window = {"window_start": "2026-01-10T00:00:00.000Z", "window_end": "2026-01-10T00:00:10.000Z"}
    assert _lines(tmp_path / "native_out") == [{**window, "n": 2, "ks": ["a", "late"]}]
    assert _lines(tmp_path / "state_out") == [{**window, "n": 1, "ks": ["a"]}]
    dead = [(d["stage"], d["reason"], json.loads(d["payload"])) for d in _lines(tmp_path / "dead_letters")]
    assert dead == [("state", "late event: event time 1768003205000 ms is behind the watermark 1768003211000 ms; "
                     "window(s) [1768003200000, 1768003210000) already closed",
                     {"ts": "2026-01-10T00:00:05.000Z", "k": "late"})]
