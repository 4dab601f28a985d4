"""`etl test`: run a pipeline's `tests:` blocks on local Spark and compare rows.

Each case replaces every source by its given events (typed with the source's
columns) and runs the pipeline, on a short processing-time trigger, into
in-memory capturing sinks (every sink and the dead-letter output). The events
come as micro-batches: `inputs` is one batch, `batches` a list of them. Each
batch is fed once the previous one is processed completely (Spark's
`processAllAvailable`: its data and the no-data batches that follow it, which
close windows and emit outer-join rows once the watermark moves); `advance`
waits processing time out first, `restart` stops the pipeline and starts it
again from its checkpoint (state, offsets and sink commits kept). Then:

* sinks named in `expect` (of the case: over all batches; of a batch: the rows
  written while that batch was processed): the number of rows exactly, and each
  expected row on the columns it names (values exact; timestamps compared as
  instants, floats to 1e-9 relative); unordered unless `ordered: true`;
* `dead_letters`: the same number of dead letters, each matched on the keys it gives;
* a batch's `watermark`: the pipeline's event-time watermark once the batch is
  processed (the smallest of its queries' that keep state, as Spark reports it; of all when none does).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any

import pyarrow as pa

from etl.compile import DEAD_LETTER, Output
from etl.runtime.rowdiff import show_row, canon, compare, diff_text, row_matches, same  # noqa: F401 (API)
from etl.runtime.sink import AbstractSink, SinkContext
from etl.compile.context import CompileError
from etl.compile.watermark import with_event_time
from etl.runtime import memory
from etl.runtime.runner import PipelineRun, RunFailed, RunOptions

TEST_TRIGGER = "100 milliseconds"


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
        self.store.extend(rows.to_pylist(maps_as_pydicts="lossy"))  # a map column as a dict, as `expect` writes it


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
    t0 = time.monotonic()
    graph = plan.graph
    steps = case.steps()
    unknown = [s for b in steps for s in b.inputs if s not in graph.nodes or graph.nodes[s].kind != "source"]
    unknown += [s for e in [case.expect] + [b.expect or {} for b in steps] for s in e
                if s not in graph.nodes or graph.nodes[s].kind != "sink"]
    if unknown:
        return CaseResult(graph.name, file, case.name, False, 0.0,
                          f"unknown source or sink id(s) in the test: {', '.join(dict.fromkeys(unknown))}")
    captured: dict[str, list[dict]] = {}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="etl-test-") as tmp:
        run = _CaseRun(plan, spark, tmp, captured, steps)
        try:
            run.start()
            for k, step in enumerate(steps):
                if step.restart and k:
                    run.restart()
                if step.advance:
                    time.sleep(float(step.advance))
                before = {sink: len(rows) for sink, rows in captured.items()}
                run.feed(k, step)
                problems += _check_batch(k, len(steps), step, case.ordered, captured, before, run.watermark())
            run.stop()
        except CompileError as e:
            run.close()
            return CaseResult(graph.name, file, case.name, False, time.monotonic() - t0,
                              e.diagnostic(graph).render(), captured)
        except RunFailed as e:
            return CaseResult(graph.name, file, case.name, False, time.monotonic() - t0, f"run failed: {e}", captured)
    for sink_id, expected in case.expect.items():
        problems += _diff(f"sink '{sink_id}'", list(expected), captured.get(sink_id, []), case.ordered)
    if case.dead_letters is not None:
        problems += _diff("dead letters", list(case.dead_letters), captured.get(DEAD_LETTER, []), False)
    return CaseResult(graph.name, file, case.name, not problems, time.monotonic() - t0, "\n".join(problems), captured)


def _diff(what: str, expected: list[dict], actual: list[dict], ordered: bool) -> list[str]:
    missing, extra = compare(expected, actual, ordered)
    if missing or extra or len(expected) != len(actual):
        return [diff_text(what, expected, actual, missing, extra)]
    return []


def _check_batch(k: int, n: int, step: Any, ordered: bool, captured: dict[str, list[dict]],
                 before: dict[str, int], watermark: datetime | None) -> list[str]:
    """The rows written while batch `k` was processed against its own expectations."""
    label = f"batch {k + 1} of {n}: " if n > 1 else ""
    out: list[str] = []
    for sink_id, expected in (step.expect or {}).items():
        got = captured.get(sink_id, [])[before.get(sink_id, 0):]
        out += _diff(f"{label}sink '{sink_id}'", list(expected), got, ordered)
    if step.dead_letters is not None:
        got = captured.get(DEAD_LETTER, [])[before.get(DEAD_LETTER, 0):]
        out += _diff(f"{label}dead letters", list(step.dead_letters), got, False)
    if step.watermark is not None:
        want = datetime.fromisoformat(step.watermark.strip().replace("Z", "+00:00"))
        want = want if want.tzinfo else want.replace(tzinfo=UTC)
        if watermark != want:
            shown = canon(watermark) if watermark is not None else "none (no event-time watermark)"
            out.append(f"{label}watermark: expected {canon(want)}, got {shown}")
    return out


def feed_sources(ddl: dict[str, str], feed_dir: str) -> dict[str, Any]:
    """Source builders (source id -> builder) reading the test feed folder, each source with its columns `ddl`."""
    feeds: dict[int, Any] = {}  # one feed DataFrame per compile: the sources of a query share one Spark source

    def make(sid: str) -> Any:
        def build(ctx: Any, node: Any) -> Any:
            feed = feeds.setdefault(id(ctx), memory.feed_stream(ctx.spark, feed_dir))
            df = memory.source_from_feed(feed, sid, ddl[sid])
            et = getattr(node.spec, "event_time", None)
            return with_event_time(df, node, et) if et is not None else df
        return build

    return {sid: make(sid) for sid in ddl}


class _CaseRun:
    """The pipeline of one case, running on a short trigger over a feed folder (etl.runtime.memory)."""

    def __init__(self, plan: Any, spark: Any, tmp: str, captured: dict[str, list[dict]], steps: list[Any]):
        self.plan, self.spark, self.tmp, self.captured = plan, spark, tmp, captured
        self.feed_dir = f"{tmp}/feed"
        graph = plan.graph
        rows_of: dict[str, list[dict]] = {}
        for b in steps:
            for sid, rows in b.inputs.items():
                rows_of.setdefault(sid, []).extend(rows)
        self.ddl = {n.id: source_ddl(graph, n, rows_of.get(n.id, [])) for n in graph.of_kind("source")}
        self.runner: Any = None

    def start(self) -> None:
        import os

        os.makedirs(self.feed_dir, exist_ok=True)

        def sink_factory(out: Output, spec: Any, ctx: SinkContext) -> AbstractSink:
            return CaptureSink(spec, ctx, self.captured.setdefault(out.id, []))

        self.runner = PipelineRun(self.plan, self.spark, RunOptions(
            checkpoint=f"{self.tmp}/checkpoint", progress="none", sources=feed_sources(self.ddl, self.feed_dir), interval=TEST_TRIGGER,
            sink_factory=sink_factory, echo=lambda s: None))
        try:
            self.runner.start()
        except BaseException:
            self.close()
            raise

    def feed(self, k: int, step: Any) -> None:
        """Write batch `k` and return once every query has processed it (raises RunFailed if one failed)."""
        memory.write_feed(self.feed_dir, k, {sid: (list(rows), self.ddl[sid]) for sid, rows in step.inputs.items()})
        for s in self.runner.streams:
            try:
                s.processAllAvailable()
            except Exception:  # noqa: BLE001 - the query failed: the runner explains it (RunFailed)
                self.runner.wait()
                raise

    def watermark(self) -> datetime | None:
        marks = []
        progress = [s.lastProgress or {} for s in self.runner.streams]
        # the queries that close windows (stateful): a stateless one (the dead letters of a stage before a window)
        # runs no batch of its own when the watermark moves, so its last progress shows the previous one
        for p in [p for p in progress if p.get("stateOperators")] or progress:
            wm = (p.get("eventTime") or {}).get("watermark")
            if wm:
                marks.append(datetime.fromisoformat(wm.replace("Z", "+00:00")))
        return min(marks) if marks else None

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        self.runner.request_stop()
        self.runner.wait()

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()


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
