"""`etl test`: run a pipeline's `tests:` blocks on local Spark and compare rows.

Each case replaces every source by its given events (typed with the source's
columns), runs the pipeline with AvailableNow into in-memory capturing sinks
(every sink and the dead-letter output), then compares:

* sinks named in `expect`: the number of rows exactly, and each expected row
  on the columns it names (values exact; timestamps compared as instants,
  floats to 1e-9 relative); unordered unless `ordered: true`;
* `dead_letters`: the same number of dead letters, each matched on the keys it gives.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa

from etl.compile import DEAD_LETTER, Output
from etl.runtime.sink import AbstractSink, SinkContext


@dataclass
class CaseResult:
    pipeline: str
    file: str
    name: str
    ok: bool
    seconds: float
    message: str = ""
    captured: dict[str, list[dict]] = field(default_factory=dict)


class CaptureSink(AbstractSink):
    """Keeps every row in memory (through the same batching and idempotency as real sinks)."""

    def __init__(self, spec: Any, ctx: SinkContext, store: list[dict]):
        super().__init__(spec, ctx)
        self.store = store

    def batch_insert(self, rows: pa.Table) -> None:
        self.store.extend(rows.to_pylist())


# ------------------------------------------------------------------ values
def _canon_time(t: datetime) -> str:
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc).replace(tzinfo=None)
    text = t.isoformat(timespec="microseconds").rstrip("0").rstrip(".")
    return text + "Z"


def canon(v: Any) -> Any:
    """A comparable form: timestamps as UTC ISO text, decimals as floats, containers recursively."""
    if isinstance(v, datetime):
        return _canon_time(v)
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, str) and len(v) >= 16 and v[4:5] == "-" and v[10:11] in ("T", " "):
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
            return _canon_time(t if t.tzinfo else t.replace(tzinfo=timezone.utc))
        except ValueError:
            return v
    if isinstance(v, dict):
        return {str(k): canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    return v


def same(a: Any, b: Any) -> bool:
    a, b = canon(a), canon(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def row_matches(expected: dict, actual: dict) -> bool:
    return all(k in actual and same(v, actual[k]) for k, v in expected.items())


def compare(expected: list[dict], actual: list[dict], ordered: bool) -> tuple[list[dict], list[dict]]:
    """(expected rows not found, actual rows not matched)."""
    if ordered:
        missing, extra = [], []
        for i in range(max(len(expected), len(actual))):
            e = expected[i] if i < len(expected) else None
            a = actual[i] if i < len(actual) else None
            if e is None:
                extra.append(a)
            elif a is None or not row_matches(e, a):
                missing.append(e)
                if a is not None:
                    extra.append(a)
        return missing, extra
    left = list(range(len(actual)))
    missing = []
    for e in sorted(expected, key=lambda r: -len(r)):
        hit = next((i for i in left if row_matches(e, actual[i])), None)
        if hit is None:
            missing.append(e)
        else:
            left.remove(hit)
    return missing, [actual[i] for i in left]


def _show(row: dict, keys: list[str] | None = None) -> str:
    import json

    shown = {k: canon(row.get(k)) for k in keys} if keys else {k: canon(v) for k, v in row.items()}
    return json.dumps(shown, default=str, sort_keys=False)


def diff_text(what: str, expected: list[dict], actual: list[dict], missing: list[dict], extra: list[dict]) -> str:
    keys: list[str] = []
    for r in expected:
        keys.extend(k for k in r if k not in keys)
    lines = [f"{what}: expected {len(expected)} rows, got {len(actual)}"]
    lines += [f"  - {_show(r)}" for r in missing]
    lines += [f"  + {_show(r, keys or None)}" for r in extra]
    return "\n".join(lines)


# ------------------------------------------------------------------ running
def _infer_ddl(rows: list[dict]) -> str:
    """Column types from the events themselves (a source without declared columns)."""
    seen: dict[str, set[type]] = {}
    for r in rows:
        for k, v in r.items():
            seen.setdefault(k, set())
            if v is not None:
                seen[k].add(type(v))

    def typ(ts: set[type]) -> str:
        if ts and ts <= {bool}:
            return "boolean"
        if ts and ts <= {int}:
            return "bigint"
        if ts and ts <= {int, float}:
            return "double"
        if ts and all(issubclass(t, datetime) for t in ts):
            return "timestamp"
        return "string"

    return ", ".join(f"`{k}` {typ(ts)}" for k, ts in seen.items()) or "`value` string"


def source_ddl(graph: Any, node: Any, rows: list[dict]) -> str:
    cols = node.spec.declared_columns() if hasattr(node.spec, "declared_columns") else None
    if not cols:
        known = graph.columns.get(node.id) if graph.columns else None
        if known:
            cols = dict(known)
    if cols and all(t not in (None, "unknown") for t in cols.values()):
        return ", ".join(f"`{k}` {t}" for k, t in cols.items())
    return _infer_ddl(rows)


def run_case(plan: Any, case: Any, spark: Any, file: str = "") -> CaseResult:
    from etl.compile.context import CompileError
    from etl.compile.watermark import with_event_time
    from etl.runtime import memory
    from etl.runtime.runner import PipelineRun, RunFailed, RunOptions

    t0 = time.monotonic()
    graph = plan.graph
    unknown = [s for s in case.inputs if s not in graph.nodes or graph.nodes[s].kind != "source"]
    unknown += [s for s in case.expect if s not in graph.nodes or graph.nodes[s].kind != "sink"]
    if unknown:
        return CaseResult(graph.name, file, case.name, False, 0.0,
                          f"unknown source or sink id(s) in the test: {', '.join(unknown)}")

    def make_source(rows: list[dict], folder: str) -> Any:
        def build(ctx: Any, node: Any) -> Any:
            df = memory.stream_from_file(ctx.spark, folder, rows, source_ddl(graph, node, rows))
            et = getattr(node.spec, "event_time", None)
            return with_event_time(df, node, et) if et is not None else df
        return build

    captured: dict[str, list[dict]] = {}

    def sink_factory(out: Output, spec: Any, ctx: SinkContext) -> AbstractSink:
        return CaptureSink(spec, ctx, captured.setdefault(out.id, []))

    with tempfile.TemporaryDirectory(prefix="etl-test-") as tmp:
        sources = {n.id: make_source(list(case.inputs.get(n.id, [])), f"{tmp}/inputs/{n.id}")
                   for n in graph.of_kind("source")}
        runner = PipelineRun(plan, spark, RunOptions(once=True, checkpoint=f"{tmp}/checkpoint", progress="none",
                                                      sources=sources,
                                                      sink_factory=sink_factory, echo=lambda s: None))
        try:
            runner.start()
            runner.wait()
        except CompileError as e:
            runner.close()
            return CaseResult(graph.name, file, case.name, False, time.monotonic() - t0,
                              e.diagnostic(graph).render(), captured)
        except RunFailed as e:
            return CaseResult(graph.name, file, case.name, False, time.monotonic() - t0, f"run failed: {e}", captured)
    problems: list[str] = []
    for sink_id, expected in case.expect.items():
        actual = captured.get(sink_id, [])
        missing, extra = compare(list(expected), actual, case.ordered)
        if missing or extra or len(expected) != len(actual):
            problems.append(diff_text(f"sink '{sink_id}'", list(expected), actual, missing, extra))
    if case.dead_letters is not None:
        actual = captured.get(DEAD_LETTER, [])
        missing, extra = compare(list(case.dead_letters), actual, False)
        if missing or extra:
            problems.append(diff_text("dead letters", list(case.dead_letters), actual, missing, extra))
    return CaseResult(graph.name, file, case.name, not problems, time.monotonic() - t0, "\n".join(problems), captured)


def run_tests(checked: Any, spark: Any, select: str | None = None) -> list[CaseResult]:
    plan = checked.plan
    return [run_case(plan, case, spark, checked.file) for case in plan.graph.pipeline.tests
            if select is None or select in case.name]


def junit_xml(results: list[CaseResult]) -> str:
    from xml.sax.saxutils import escape, quoteattr

    suites: dict[str, list[CaseResult]] = {}
    for r in results:
        suites.setdefault(r.file or r.pipeline, []).append(r)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites tests="{len(results)}" failures="{sum(not r.ok for r in results)}">']
    for name, rs in suites.items():
        out.append(f'  <testsuite name={quoteattr(name)} tests="{len(rs)}" failures="{sum(not r.ok for r in rs)}" '
                   f'time="{sum(r.seconds for r in rs):.3f}">')
        for r in rs:
            out.append(f'    <testcase classname={quoteattr(r.pipeline)} name={quoteattr(r.name)} time="{r.seconds:.3f}">')
            if not r.ok:
                first = r.message.splitlines()[0] if r.message else "failed"
                out.append(f'      <failure message={quoteattr(first)}>{escape(r.message)}</failure>')
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
