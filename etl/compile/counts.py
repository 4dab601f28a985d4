"""Row counts of every transform's output, at the cost of one accumulator (Spark's `DataFrame.observe`).

Each transform's output (each label of a route) carries one `count(1)` metric
named `etl.rows/<node>[/<label>]` (CollectMetrics: an accumulator merged as the
tasks end; no shuffle, no extra job). Where the node runs decides how its count
comes back:

* compiled into a query's streaming plan (the transforms before a window, join
  or dedupe, or under a union sink): the metric is named on the streaming
  frame; Spark reports it per micro-batch in the query's progress
  (`observedMetrics`, `Query.observed` says which names each query carries);
* evaluated on each micro-batch (the stages after a query's root): an
  `Observation` per batch, read (never waited for) once the sinks have written
  the batch: the first action over the stage gives its count.

A stage whose good rows a sink writes by splitting its shared frame (etl.compile
`splits`) is counted on that frame (`count(ERR IS NULL)`): its `out` frame is
not computed then. Rows in of a transform are not observed: they are its
inputs' rows out (etl.runtime.metrics adds them along the graph's edges).
ETL_COMPONENT_COUNTS=off (the physical plan's target, shown by `etl explain`)
builds none of this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from etl.compile.jcalls import observe as observed
from etl.compile.context import ERR, Built

PREFIX = "etl.rows/"
# (SQL text rather than Column calls: each Column call is py4j round trips, and these run per micro-batch)
GOOD_ROWS = f"count(CASE WHEN `{ERR}` IS NULL THEN 1 END) AS rows"
FAILED_ROWS = f"count(CASE WHEN `{ERR}` IS NOT NULL THEN 1 END) AS rows"


def metric_name(node: str, label: str | None = None) -> str:
    return PREFIX + node + (f"/{label}" if label else "")


def parse_name(name: str) -> tuple[str, str | None] | None:
    """(node, label) of one of our metric names; None for any other observation."""
    if not name.startswith(PREFIX):
        return None
    node, _, label = name[len(PREFIX):].partition("/")
    return node, (label or None)


def claims(graph: Any, queries: Any) -> dict[str, tuple[str, bool]]:
    """Which query counts each transform, and whether in its streaming plan (True) or per micro-batch: the first
    query (the physical plan's, those writing sinks before those writing a root's failed input rows only) whose
    batches compute the transform's rows. A transform several queries stream carries its metric in each (one
    frame), the others' values are not read; a query that only reads a stage's dead letters does not count it."""
    order = list(graph.nodes)

    def upstream(ids: list[str]) -> list[str]:
        seen: list[str] = []
        todo = list(ids)
        while todo:
            nid = todo.pop()
            if nid not in seen:
                seen.append(nid)
                todo.extend(e.src for e in graph.node(nid).inputs if e.role == "input")
        return seen

    got: dict[str, tuple[str, bool]] = {}
    for q in sorted(queries, key=lambda q: (q.kind == "dead_only", order.index(q.root) if q.root in order else 0)):
        root = graph.node(q.root)
        if q.kind == "root":
            streamed, read = upstream([q.root]), {n for o in q.outputs for n, _, part in o.refs if part == "out"}
            read |= {e.src for nid in q.nodes for e in graph.node(nid).inputs}
            per_batch = [n for n in q.nodes if n in read]
        else:  # a union sink's query, or a root's failed input rows: their inputs' streaming plans
            streamed, per_batch = upstream([e.src for e in root.inputs if e.role == "input"]), []
        for nid, in_stream in [*((n, True) for n in streamed), *((n, False) for n in per_batch)]:
            if nid not in got and graph.node(nid).kind == "transform":
                got[nid] = (q.name, in_stream)
    return got


def _rows() -> Any:
    from pyspark.sql import functions as F

    return F.count(F.lit(1)).alias("rows")


def observe_stream(built: Built, node: str) -> Built:
    """`built` (a transform compiled over streaming frames) with its outputs named for the query's progress."""
    if built.out is not None:
        built.out = built.out.observe(metric_name(node), _rows())
    if built.outs:
        built.outs = {lb: f.observe(metric_name(node, lb), _rows()) for lb, f in built.outs.items()}
    return built


@dataclass
class BatchCounts:
    """The observations of one micro-batch's stages: (node, label) -> pyspark Observation."""

    observations: dict[tuple[str, str | None], Any] = field(default_factory=dict)

    def observe(self, built: Built, node: str) -> Built:
        if built.out is not None:
            built.out = self._on(built.out, node, None)
        if built.outs:
            built.outs = {lb: self._on(f, node, lb) for lb, f in built.outs.items()}
        return built

    def observe_split(self, shared: Any, node: str) -> Any:
        """A stage's shared frame a sink splits while writing: its good rows counted there."""
        frame, obs = observed(shared, metric_name(node) + "#split", GOOD_ROWS)
        self.observations[(node, None)] = obs  # replaces the `out` frame's, which this batch does not compute
        return frame

    def _on(self, frame: Any, node: str, label: str | None) -> Any:
        frame, obs = observed(frame, metric_name(node, label), "count(1) AS rows")
        self.observations[(node, label)] = obs
        return frame

    def collect(self) -> dict[tuple[str, str | None], int]:
        """The counts of the stages some action computed (a stage no sink read this batch has none)."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        got: dict[tuple[str, str | None], int] = {}
        for key, obs in self.observations.items():
            jo = getattr(obs, "_jo", None)
            if jo is None or not jo.future().isCompleted():
                continue
            try:
                value = obs.get.get("rows")
            except (Py4JJavaError, PySparkException):  # the action failed: no count (the batch is retried or fails)
                continue
            if value is not None:
                got[key] = int(value)
        return got


@dataclass
class DeadCounts:
    """The failed rows of the stages whose dead letters are a frame of one micro-batch (a stage read by a sink and
    by its dead letters, its frame cached for the batch), counted where the sinks' pass reads the stage's frame:
    `count(ERR IS NOT NULL)` on the rows above the cache (one accumulator, as the rows out). When every part of the
    dead-letter frame was counted and each count is 0, the batch has no dead letters and writes none: no Spark
    job for them (issue 42). A count no action took (the frame was not read, a sink skipped a replayed batch) is
    unknown, and the dead letters are written as before."""

    observations: dict[str, Any] = field(default_factory=dict)  # stage -> pyspark Observation
    parts: list[str | None] | None = None  # the dead-letter frame's parts: a watched stage, None another kind

    def watch(self, built: Built, node: str) -> None:
        """Count the failed rows of `built` (a stage with a shared frame) where its halves read it; its cached frame
        stays the shared frame below the count, so the count runs on the cached rows."""
        from etl.compile.deadletter import SplitBuilt

        if not isinstance(built, SplitBuilt) or built.shared is None or built.derived:
            return
        if built.base is None:
            built.base = built.shared
        built.shared, self.observations[node] = observed(built.shared, f"etl.dead/{node}", FAILED_ROWS)

    def unwatch(self, built: Built, node: str) -> None:
        """No count for `node` (a sink splits its shared frame while writing: its failed rows come back to the
        driver), unless a half of it was made over the counted frame already."""
        if node in self.observations and not getattr(built, "derived", True):
            built.shared = built.base
            del self.observations[node]

    def none(self) -> bool:
        """Did the sinks' pass count every part of the dead-letter frame, each 0?"""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        if not self.parts or any(p is None or p not in self.observations for p in self.parts):
            return False
        for p in cast(list[str], self.parts):  # no None: returned above
            jo = getattr(self.observations[p], "_jo", None)
            if jo is None or not jo.future().isCompleted():
                return False
            try:
                if self.observations[p].get.get("rows") != 0:
                    return False
            except (Py4JJavaError, PySparkException):  # the action failed: unknown
                return False
        return True
