"""Progress records (JSON lines, plain lines) and `etl test` row comparison; no JVM needed."""

from __future__ import annotations

import io
import json
from datetime import datetime, UTC

from etl.runtime.progress import Progress
from etl.runtime.testing import canon, compare, junit_xml, CaseResult

PROGRESS = {"name": "p/q", "batchId": 3, "numInputRows": 120, "inputRowsPerSecond": 60.0,
            "processedRowsPerSecond": 240.0, "eventTime": {"watermark": "2026-01-10T12:07:59.000Z"},
            "stateOperators": [{"numRowsTotal": 17}], "durationMs": {"triggerExecution": 512}}


def test_json_progress_line_has_sink_counts_and_dead_letters():
    out = io.StringIO()
    p = Progress("p", "json", out)
    p.sink_counts("q", 3, {"files": 100, "dead_letter": 20}, ["files"])
    p.on_progress(PROGRESS)
    rec = json.loads(out.getvalue())
    assert rec == {"pipeline": "p", "query": "q", "batch": 3, "input_rows": 120, "input_rows_per_s": 60.0,
                   "processed_rows_per_s": 240.0, "written": {"files": 100}, "skipped": ["files"],
                   "dead_letters": 20, "watermark": "2026-01-10T12:07:59.000Z", "state_rows": 17,
                   "duration_ms": 512}
    assert "wrote files=100, dead letters 20" in p.summary()


def test_plain_progress_when_not_a_terminal():
    out = io.StringIO()
    with Progress("p", "live", out) as p:  # not a TTY: falls back to plain lines
        assert p.mode == "plain"
        p.sink_counts("q", 3, {"files": 100}, [])
        p.on_progress(PROGRESS)
    line = out.getvalue()
    assert "q batch 3: in=120" in line and "files=100" in line and "watermark=2026-01-10T12:07:59" in line


def test_live_table_renders():
    p = Progress("p", "plain", io.StringIO())
    p.sink_counts("q", 3, {"files": 100}, [])
    p.on_progress(PROGRESS)
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=200).print(p._table())
    assert "files=100" in buf.getvalue() and "q" in buf.getvalue()


def test_canon_timestamps_and_compare():
    t = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
    assert canon(t) == canon("2026-01-10T12:00:00Z") == canon("2026-01-10 12:00:00.000+00:00") == "2026-01-10T12:00:00Z"
    actual = [{"a": 1, "t": t, "x": 0.1 + 0.2}, {"a": 2, "t": t, "x": 1.0}]
    assert compare([{"a": 2}, {"a": 1, "x": 0.3}], actual, ordered=False) == ([], [])
    missing, extra = compare([{"a": 1}, {"a": 1}], actual, ordered=False)
    assert missing == [{"a": 1}] and extra == [actual[1]]
    assert compare([{"a": 2}, {"a": 1}], actual, ordered=True)[0] == [{"a": 2}, {"a": 1}]


def test_junit_xml():
    xml = junit_xml([CaseResult("p", "f.yaml", "ok case", True, 1.0), CaseResult("p", "f.yaml", "bad <case>", False, 2.0,
                                                                              "sink 'x': expected 1 rows, got 0")])
    assert 'tests="2" failures="1"' in xml and "bad &lt;case&gt;" in xml and "expected 1 rows" in xml
