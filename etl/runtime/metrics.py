"""Prometheus metrics of a running pipeline, per component and per query.

Fed by what `etl run` already has, at no extra Spark job: Spark's query
progress events (rows read per source, durations, watermark, state rows), the
sinks' own results for each micro-batch (rows written, retries, write time) and
the rows out of every transform (etl.compile.counts: one accumulator per
transform output, in the progress's `observedMetrics` for the stages of a
streaming plan, from the batch's observations for the stages evaluated per
micro-batch). A transform's rows in are its inputs' rows out, added along the
graph's edges. A transform several queries compute (each its own pass) is
counted in the first query that computes it, as a source is.

The definitions below are the single list of metrics: the reference's table is
generated from them (`python -m etl.runtime.metrics`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from etl.compile.counts import parse_name

DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass(frozen=True)
class Metric:
    name: str  # without the etl_ prefix (and without _total for counters)
    kind: str  # counter | gauge | histogram
    labels: tuple[str, ...]
    help: str

    @property
    def exposed(self) -> str:
        return f"etl_{self.name}" + ("_total" if self.kind == "counter" else "")


DEFINITIONS: tuple[Metric, ...] = (
    Metric("component_rows_in", "counter", ("component",),
           "rows into a component: rows read by a source, rows out of a transform's inputs, rows handed to a sink "
           "(dead_letter: the dead-letter sink)"),
    Metric("component_rows_out", "counter", ("component",),
           "rows out of a component: rows read by a source, a transform's rows out (good rows; a route: all its "
           "labels), rows a sink wrote to its destination"),
    Metric("dead_letters", "counter", ("query",), "rows the query's stages sent to the dead-letter sink"),
    Metric("sink_retries", "counter", ("component",), "writes a sink retried after a transient error"),
    Metric("sink_replays_skipped", "counter", ("component",),
           "micro-batches a sink skipped because it had committed them before (replay after a crash)"),
    Metric("batches", "counter", ("query",), "micro-batches completed"),
    Metric("query_input_rows", "counter", ("query",), "rows read by the query (all its sources)"),
    Metric("batch_duration_seconds", "histogram", ("query",), "duration of a micro-batch (Spark's triggerExecution)"),
    Metric("sink_flush_seconds", "histogram", ("component",),
           "time a sink took to write and commit one micro-batch"),
    Metric("watermark_seconds", "gauge", ("query",), "event-time watermark (Unix seconds; absent before the first)"),
    Metric("watermark_lag_seconds", "gauge", ("query",),
           "how far the watermark trails the time of the query's last batch"),
    Metric("state_rows", "gauge", ("query",), "rows held in the query's state stores (windows, dedupe, joins)"),
    Metric("state_memory_bytes", "gauge", ("query",), "memory used by the query's state stores"),
    Metric("spark_batch_id", "gauge", ("query",), "id of the query's last micro-batch"),
    Metric("spark_input_rows", "gauge", ("query",), "rows read by the query's last micro-batch"),
    Metric("spark_input_rows_per_second", "gauge", ("query",), "Spark's inputRowsPerSecond of the last batch"),
    Metric("spark_processed_rows_per_second", "gauge", ("query",),
           "Spark's processedRowsPerSecond of the last batch"),
    Metric("spark_duration_seconds", "gauge", ("query", "phase"),
           "Spark's durationMs of the last batch per phase (addBatch, getBatch, latestOffset, queryPlanning, "
           "triggerExecution, walCommit, commitOffsets)"),
)


class Metrics:
    """The metrics of one pipeline run, in their own registry (served by etl.runtime.control)."""

    def __init__(self, pipeline: str):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        try:
            from prometheus_client import disable_created_metrics

            disable_created_metrics()  # no *_created series: half the lines, nothing a dashboard reads
        except ImportError:  # pragma: no cover - older clients
            pass
        self.pipeline = pipeline
        self.registry = CollectorRegistry(auto_describe=True)
        self._m: dict[str, Any] = {}
        for d in DEFINITIONS:
            labels = ("pipeline", *d.labels)
            if d.kind == "counter":
                self._m[d.name] = Counter(f"etl_{d.name}", d.help, labels, registry=self.registry)
            elif d.kind == "gauge":
                self._m[d.name] = Gauge(f"etl_{d.name}", d.help, labels, registry=self.registry)
            else:
                self._m[d.name] = Histogram(f"etl_{d.name}", d.help, labels, registry=self.registry,
                                            buckets=DURATION_BUCKETS)
        self._sources: dict[str, str] = {}  # query -> the source whose rows it counts (one source per query)
        self._counts: dict[str, str] = {}  # transform -> the query whose batches count its rows out
        self._readers: dict[tuple[str, str | None], list[str]] = {}  # (node, label) -> transforms reading it

    def _get(self, name: str, *labels: str) -> Any:
        return self._m[name].labels(self.pipeline, *labels)

    def bind(self, graph: Any, queries: list[Any]) -> None:
        """Which query counts which source's rows: each source in the first query that reads it (several
        queries may read one source, each its own pass); a query reading several sources counts none
        per source (Spark's progress names them by description only)."""
        claimed: set[str] = set()
        for q in queries:
            root = graph.nodes.get(q.root)
            if root is None:
                continue
            ups = [root.id] if root.kind == "source" else [n.id for n in graph.upstream_sources(root.id)]
            if len(ups) == 1 and ups[0] not in claimed:
                claimed.add(ups[0])
                self._sources[q.name] = ups[0]
            for s in ups:
                self._get("component_rows_in", s)  # every component shows up at 0 before its first batch
                self._get("component_rows_out", s)
            for o in q.outputs:
                self._get("component_rows_in", o.id)
                self._get("component_rows_out", o.id)
            self._get("batches", q.name)
            self._get("dead_letters", q.name)
        for q in sorted(queries, key=lambda q: bool(getattr(q, "dead_only", False))):
            for t in getattr(q, "counted", ()):
                if t not in self._counts:
                    self._counts[t] = q.name
                    self._get("component_rows_in", t)
                    self._get("component_rows_out", t)
        for node in graph.nodes.values():
            if node.kind == "transform":
                for e in getattr(node, "inputs", ()):
                    if e.role == "input":
                        self._readers.setdefault((e.src, e.label), []).append(node.id)

    def _rows_out(self, node: str, label: str | None, rows: int) -> None:
        """Rows out of a node (a source's, a transform's label): its readers' rows in."""
        self._get("component_rows_out", node).inc(rows)
        for t in self._readers.get((node, label), ()):
            self._get("component_rows_in", t).inc(rows)

    # ------------------------------------------------------------- feeding
    def rows_out(self, query: str, counted: dict[tuple[str, str | None], int]) -> None:
        """Rows out of the stages one micro-batch of `query` evaluated ((node, label) -> rows)."""
        for (node, label), rows in counted.items():
            if self._counts.get(node) == query:
                self._rows_out(node, label, rows)

    def sink_result(self, component: str, result: Any) -> None:
        """One sink's WriteResult for one micro-batch (etl.runtime.sink)."""
        if getattr(result, "skipped", False):
            self._get("sink_replays_skipped", component).inc()
            return
        rows = int(getattr(result, "rows", 0) or 0)
        self._get("component_rows_in", component).inc(rows)
        self._get("component_rows_out", component).inc(rows)
        self._get("sink_retries", component).inc(int(getattr(result, "retries", 0) or 0))
        self._get("sink_flush_seconds", component).observe(float(getattr(result, "seconds", 0.0) or 0.0))

    def on_progress(self, query: str, p: dict[str, Any], dead_letters: int) -> None:
        """One StreamingQueryProgress (as JSON) of `query`, with its dead-letter count from the sinks."""
        rows = int(p.get("numInputRows") or 0)
        self._get("batches", query).inc()
        self._get("query_input_rows", query).inc(rows)
        self._get("dead_letters", query).inc(dead_letters)
        source = self._sources.get(query)
        if source is not None:
            self._get("component_rows_in", source).inc(rows)
            self._rows_out(source, None, rows)
        observed = {}
        for name, values in (p.get("observedMetrics") or {}).items():
            key = parse_name(name)
            if key is not None and isinstance(values, dict):
                observed[key] = int(values.get("rows") or 0)
        self.rows_out(query, observed)
        durations = p.get("durationMs") or {}
        total = durations.get("triggerExecution")
        if total is not None:
            self._get("batch_duration_seconds", query).observe(float(total) / 1000)
        for phase, ms in durations.items():
            self._get("spark_duration_seconds", query, phase).set(float(ms) / 1000)
        self._get("spark_batch_id", query).set(int(p.get("batchId", -1)))
        self._get("spark_input_rows", query).set(rows)
        self._get("spark_input_rows_per_second", query).set(float(p.get("inputRowsPerSecond") or 0.0))
        self._get("spark_processed_rows_per_second", query).set(float(p.get("processedRowsPerSecond") or 0.0))
        states = p.get("stateOperators") or []
        self._get("state_rows", query).set(sum(int(s.get("numRowsTotal") or 0) for s in states))
        self._get("state_memory_bytes", query).set(sum(int(s.get("memoryUsedBytes") or 0) for s in states))
        wm = _seconds((p.get("eventTime") or {}).get("watermark"))
        if wm is not None and wm > 0:
            self._get("watermark_seconds", query).set(wm)
            now = _seconds(p.get("timestamp"))
            if now is not None:
                self._get("watermark_lag_seconds", query).set(max(0.0, now - wm))

    def text(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


def _seconds(stamp: str | None) -> float | None:
    """Spark's ISO-8601 timestamps ('2026-01-10T12:00:00.000Z') as Unix seconds."""
    if not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def markdown_table() -> str:
    """The reference's list of metrics (docs/reference/metrics.md, `etl docs`), from DEFINITIONS."""
    lines = ["| metric | type | labels | meaning |", "|---|---|---|---|"]
    for d in DEFINITIONS:
        labels = ", ".join(("pipeline", *d.labels))
        lines.append(f"| `{d.exposed}` | {d.kind} | {labels} | {d.help} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
