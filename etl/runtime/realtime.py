"""Run a pipeline in Spark's real-time mode (`trigger: {mode: realtime}`; etl.graph.realtime says which can).

The sink's query has no foreachBatch: Spark's own sink (the sink spec's REALTIME_WRITER) writes it, so its tasks
write a row as soon as they read it. Queries:

* `<sink>`, in real-time mode: the source read and the chain of transforms compiled over streaming frames by the
  same builders and engines as a micro-batch run (etl.compile.Compiler.stream), the rows shaped by the sink itself
  (`prepare_columns`: key, value, headers, as its micro-batch writes render them), `trigger(realTime=<interval>)`,
  output mode update (the only one the mode takes);
* `<source>-dead_letters`, in micro-batches every `interval`: the source's topics read again, their failed rows
  written by the runner's usual path (foreachBatch, reasons redacted) to the pipeline's dead-letter sink, any type,
  with its own delivery. Its tasks are short: the real-time query's long-running tasks keep their slots.

`etl run --once`, `--drain` and `etl test` run the whole pipeline in micro-batches instead (available now).
"""

from __future__ import annotations

from typing import Any

from etl import registry
from etl.compile import DEAD_LETTER, Compiler, CompileError, Output, Query, Ref
from etl.graph.model import Graph
from etl.graph.realtime import HINT
from etl.physical import PhysicalPlan
from etl.physical.engines import ENGINES
from etl.runtime.sink import AbstractSink


def refuse_python_engines(graph: Graph, physical: PhysicalPlan) -> None:
    """CompileError (E415) when the physical plan runs a transform's aspect in Python workers, which real-time mode
    refuses (the planner takes such an engine only when no other can run: etl.physical.planner.pick)."""
    for node in graph.of_kind("transform"):
        planned = physical.find(node.id)
        python = {e.name for e in ENGINES + tuple(type(node.spec).ENGINES) if e.python}
        for c in planned.choices if planned is not None else ():
            if c.engine in python:
                why = "; ".join(f"{r.engine}: {r.why}" for r in c.rejected)
                raise CompileError(f"trigger mode realtime: {node.type} '{node.id}' runs its {c.aspect} in Python "
                                   f"workers ({c.engine}), which Spark's real-time mode does not run"
                                   + (f" (not taken: {why})" if why else ""), node, None, HINT, code="E415")


def queries(compiler: Compiler) -> list[Query]:
    """The real-time queries of the compiler's pipeline: the sink's, then each source's dead letters."""
    graph = compiler.graph
    refuse_python_engines(graph, compiler.ctx.physical_plan())
    out = []
    for sink in graph.of_kind("sink"):
        edge = next(e for e in sink.inputs if e.role == "input")
        frame = compiler.stream(edge.src).output(edge.label)
        out.append(Query(sink.id, sink.id, frame, [Output(sink.id, (Ref(edge.src, edge.label),), sink.spec)]))
    for source in graph.of_kind("source"):
        dead = compiler.stream(source.id).dead
        if dead is not None:
            out.append(Query(f"{source.id}-dead_letters", source.id, dead,
                             [Output(DEAD_LETTER, (Ref(source.id, None, "dead"),))], dead_only=True))
    return out


def start(q: Query, sink: AbstractSink, name: str, checkpoint: str, interval_s: float, base_dir: str) -> Any:
    """Start `q` in real-time mode, written by `sink`'s spec's REALTIME_WRITER (its rows shaped by `sink`)."""
    writer = registry.load(sink.spec.REALTIME_WRITER)
    cols = sink.prepare_columns(q.stream)  # (None: the sink takes the rows as they are)
    w = writer(q.stream if cols is None else q.stream.select(*cols), sink.spec, base_dir)
    return (w.queryName(name).option("checkpointLocation", checkpoint).outputMode("update")
            .trigger(realTime=f"{int(round(interval_s * 1000))} milliseconds").start())
