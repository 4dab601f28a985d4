"""Which watermark a window's late events are compared with (etl.physical.lateness), as `etl explain` says it
under the window's engine: the previous micro-batch's (Spark's rule) for a native window, naming the other
stateful components of its query; the current one (Flink's rule) for the state engine. No Spark
(tests/spark/test_late_events.py runs both rules)."""

from __future__ import annotations

from pathlib import Path

from etl.check import check_file
from etl.physical import Target, physical_plan
from etl.physical.explain import explain_physical

PIPELINE = """\
name: late
sources:
  - {id: src, type: file, path: in, format: jsonl, schema: {ts: timestamp, k: string},
     event_time: {field: ts, watermark: 1s}}
  - {id: users, type: file, path: users.csv, format: csv, static: true, schema: {k: string, name: string}}
transforms:
  - {id: alone, type: window, input: src, kind: tumbling, size: 10s, aggregates: [{fn: count, as: n}]}
  - {id: to_dead, type: window, input: src, kind: tumbling, size: 10s, aggregates: [{fn: count, as: n}],
     emit: {late: dead_letter}}
  - {id: unique, type: dedupe, input: src, keys: [k]}
  - {id: after_dedupe, type: window, input: unique, kind: tumbling, size: 10s, aggregates: [{fn: count, as: n}]}
  - {id: named, type: lookup, input: src, table: users, on: {k: k}}
  - {id: after_lookup, type: window, input: named, kind: tumbling, size: 10s, aggregates: [{fn: count, as: n}]}
sinks:
  - {id: a, type: file, input: alone, path: a}
  - {id: b, type: file, input: to_dead, path: b}
  - {id: c, type: file, input: after_dedupe, path: c}
  - {id: d, type: file, input: after_lookup, path: d}
"""
PREVIOUS = ["    late events: compared with the previous micro-batch's watermark (Spark's rule): an event",
            "      arriving in the micro-batch right after the watermark passed its window's end is still",
            "      counted; a later one is dropped"]


def _engine_lines(text: str, window: str) -> list[str]:
    lines = text.splitlines()
    at = lines.index(next(x for x in lines if x.startswith(f"  {window} window: ")))
    end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("    "))
    return lines[at:end]


def test_the_late_rule_of_each_window_as_planned_and_explained(tmp_path: Path):
    (tmp_path / "in").mkdir()
    (tmp_path / "users.csv").write_text("k,name\na,A\n")
    (tmp_path / "p.yaml").write_text(PIPELINE)
    c = check_file(str(tmp_path / "p.yaml"), programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    pp = physical_plan(c.plan, Target())
    assert dict(pp.lates) == {"alone": (), "to_dead": (), "after_dedupe": ("unique",), "after_lookup": ()}
    text = explain_physical(pp)
    assert _engine_lines(text, "alone") == ["  alone window: native - Spark's window aggregation with watermark",
                                            *PREVIOUS]
    assert _engine_lines(text, "after_lookup")[1:] == PREVIOUS  # a lookup's table is joined without state
    assert _engine_lines(text, "to_dead") == [
        "  to_dead window: state - transformWithState over RocksDB (early results, late dead letters, Python",
        "      aggregates)",
        "    not native: late events to dead letters need the state engine",
        "    late events: an event whose window ended at or before the current watermark is late (Flink's",
        "      rule; the state engine's processor)"]
    assert _engine_lines(text, "after_dedupe") == [
        "  after_dedupe window: native - Spark's window aggregation with watermark",
        "    late events: compared with the previous micro-batch's watermark (Spark's rule; its query also",
        "      holds unique): an event arriving in the micro-batch right after the watermark passed its",
        "      window's end is still counted; a later one is dropped"]
