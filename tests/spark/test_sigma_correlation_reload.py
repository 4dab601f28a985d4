"""Hot reload of a running sigma_correlation: a changed condition applies to the windows that close after
it; a change of the windowed state (the timespan) is rejected with one W342 line naming its place, and the
previous correlation rules stay in force; a changed `generate` changes the filter's alert output (the filter
runs on the micro-batches of its own sink's query)."""

from __future__ import annotations

import json
import logging
import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from etl.check import check_file
from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.testing import CaptureSink, canon

pytestmark = pytest.mark.spark

PIPELINE = """
    name: t-sigma-corr-reload
    trigger: {mode: interval, interval: 100ms}
    sources:
      - {id: src, type: file, path: in, format: jsonl, max_files_per_trigger: 1,
         schema: {EventID: int, User: string, ts: timestamp}, event_time: {field: ts, watermark: 0s}}
    transforms:
      - {id: alerts, type: filter, input: src, mode: alerts, sigma: {paths: [rules]}}
      - {id: corr, type: sigma_correlation, input: alerts}
    sinks:
      - {id: out, type: file, input: corr, path: out}
      - {id: alerts_out, type: file, input: alerts, path: alerts}
"""

RULES = """\
title: Failed Logon
name: failed_logon
logsource: {product: windows, service: security}
detection:
    selection:
        EventID: 4625
    condition: selection
---
title: Brute Force
name: brute_force
correlation:
    type: event_count
    rules: [failed_logon]
    group-by: [User]
    timespan: TIMESPAN
    condition: {gte: COUNT}
    generate: GENERATE
level: high
"""


class Rows(CaptureSink):
    """Rows per sink ({sink id: [row]}) and the micro-batches each sink wrote ({sink id + '#': [batch id]})."""

    def __init__(self, spec: Any, ctx: Any, rows: dict):
        super().__init__(spec, ctx, [])
        self.got = rows.setdefault(spec.id, [])
        self.seen = rows.setdefault(spec.id + "#", [])

    def write_batch(self, df: Any, batch_id: int) -> Any:
        self.seen.append(batch_id)
        return super().write_batch(df, batch_id)

    def batch_insert(self, rows: Any) -> None:
        self.got.extend(rows.to_pylist())


def _rules(tmp_path: Path, timespan: str, count: int, generate: bool = False) -> None:
    tmp = tmp_path / ".rules.tmp"
    tmp.write_text(RULES.replace("TIMESPAN", timespan).replace("COUNT", str(count))
                   .replace("GENERATE", str(generate).lower()))
    os.replace(tmp, tmp_path / "rules" / "logons.yml")


def _put(tmp_path: Path, n: int, events: list[tuple[int, int, str]]) -> None:
    """Events (seconds after 2026-01-01T00:00:00Z, EventID, User) as one input file."""
    tmp = tmp_path / f".part-{n}.tmp"
    tmp.write_text("".join(json.dumps({"EventID": e, "User": u, "ts": f"2026-01-01T00:{t // 60:02d}:{t % 60:02d}Z"})
                           + "\n" for t, e, u in events))
    os.replace(tmp, tmp_path / "in" / f"part-{n:03d}.jsonl")


def _wait(rows: dict, key: str, n: int, run: PipelineRun, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(rows.get(key, ())) < n:
        if any(not s.isActive for s in run.streams):
            raise AssertionError(f"query stopped: {[s.exception() for s in run.streams]}")
        assert time.monotonic() < deadline, f"only {rows} after {timeout} s"
        time.sleep(0.1)


def test_a_changed_threshold_applies_and_a_changed_timespan_is_rejected(spark, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="etl.rules")
    (tmp_path / "in").mkdir()
    (tmp_path / "rules").mkdir()
    _rules(tmp_path, "1m", 3)
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent(PIPELINE))
    c = check_file(p, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.diagnostics]
    rows: dict = {}
    run = PipelineRun(c.plan, spark, RunOptions(checkpoint=str(tmp_path / "ck"), progress="none",
                                                sink_factory=lambda out, spec, ctx: Rows(spec, ctx, rows),
                                                echo=lambda s: None))
    run.start()
    try:
        # 00:00-00:01: alice fails 3 times, bob twice; an event at 00:01:30 closes the window (watermark 0s)
        _put(tmp_path, 1, [(5, 4625, "alice"), (10, 4625, "alice"), (20, 4625, "alice"), (30, 4625, "bob"),
                           (40, 4625, "bob")])
        _put(tmp_path, 2, [(90, 1, "nobody")])
        _wait(rows, "out", 1, run)
        _wait(rows, "alerts_out#", 2, run)  # the filter's own query read both files (no alert: generate false)
        _rules(tmp_path, "1m", 2, True)  # the threshold applies to the windows closing from now on; generate too
        _put(tmp_path, 3, [(125, 4625, "carol"), (130, 4625, "carol"), (140, 4625, "dave")])
        _put(tmp_path, 4, [(200, 1, "nobody")])
        _wait(rows, "out", 2, run)
        _rules(tmp_path, "5m", 2, True)  # the timespan: a new windowed state, rejected; 1m windows and gte 2 stay
        _put(tmp_path, 5, [(245, 4625, "erin"), (250, 4625, "erin")])
        _put(tmp_path, 6, [(330, 1, "nobody")])
        _wait(rows, "out", 3, run)
        _wait(rows, "alerts_out", 5, run)
    finally:
        run.request_stop()
        run.wait()
    got = [(r["rule"], r["rule_level"], dict(r["group"]), canon(r["window_start"]), canon(r["window_end"]),
            r["value"]) for r in rows["out"]]
    assert got == [
        ("brute_force", "high", {"User": "alice"}, "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", 3.0),
        ("brute_force", "high", {"User": "carol"}, "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z", 2.0),
        ("brute_force", "high", {"User": "erin"}, "2026-01-01T00:04:00Z", "2026-01-01T00:05:00Z", 2.0),
    ]
    assert sorted((r["User"], canon(r["ts"])) for r in rows["alerts_out"]) == [
        ("carol", "2026-01-01T00:02:05Z"), ("carol", "2026-01-01T00:02:10Z"), ("dave", "2026-01-01T00:02:20Z"),
        ("erin", "2026-01-01T00:04:05Z"), ("erin", "2026-01-01T00:04:10Z")]
    rejected = [r.getMessage() for r in caplog.records if "W342" in r.getMessage()]
    assert rejected == [
        f"sigma_correlation 'corr': {tmp_path}/rules/logons.yml:15:5: W342 Sigma correlation rule 'Brute Force' "
        "(brute_force) changed its timespan (1m -> 5m): that changes the windowed state and needs a restart; the "
        "previous correlation rules stay in force"]
    assert [r.getMessage() for r in caplog.records if "correlation rules reloaded" in r.getMessage()] == [
        "sigma_correlation 'corr': correlation rules reloaded: 1"]
