"""Spark's real-time mode (`trigger: {mode: realtime}`): which pipelines it can run, checked by `etl validate`.

In real-time mode (pyspark 4.3, `DataStreamWriter.trigger(realTime=...)`) a query runs long batches whose tasks
read each Kafka record as it arrives and write its result at once; Spark checkpoints the offsets at the end of each
batch (`trigger.interval`, at least 5s). Spark refuses every operator and sink outside its allowlist
(RealTimeModeAllowlist): no Python UDF or mapInArrow, no union, no foreachBatch, no file sink. So etl runs a pipeline
in it only as one chain written by Spark's own sink (etl.runtime.realtime):

* its sources REALTIME (Kafka), without `event_time` (only windows, joins and dedupe use it, and they keep state)
  and without per-trigger limits (SOURCE_REFUSED: Spark refuses them in this mode);
* its transforms REALTIME (filter, select: Spark expressions), stateless, one input each, none writing dead
  letters of its own (a filter `expr` that throws on a row, an expression in `select`): the rules run in the JVM
  (an engine of Python workers is refused when the physical plan picks one: etl.runtime.realtime);
* one sink with a REALTIME_WRITER (Kafka), written at least once: Spark's Kafka sink has no transactions, and a
  batch restarted after a failure writes its rows since the last checkpointed offsets again. The sink must say
  `delivery: at_least_once` (its default, exactly once, is not what it would get), and gives no `options`
  (librdkafka names there; Spark's producer takes the Java client's);
* the sources' failed rows (a value that is not JSON) go to the dead-letter sink (any type, its own delivery) by a
  second query reading the same topics in micro-batches;
* no Python `functions`.

Every other pipeline is refused with E415 at the trigger's `mode`, naming what stands in the way and where.
"""

from __future__ import annotations

from typing import Any

from etl.diagnostics import Report, Span
from etl.graph.model import Graph, Node

HINT = ("real-time mode runs a stateless Kafka -> filter/select -> Kafka chain (docs/pipeline-format.md#real-time-"
        "mode); use `mode: interval` for the others")


def realtime(graph: Graph) -> bool:
    """Does the pipeline ask for Spark's real-time mode?"""
    trigger = getattr(graph.pipeline, "trigger", None)
    return getattr(trigger, "mode", None) == "realtime"


def _at(node: Node) -> str:
    return f"{node.kind} '{node.id}' ({node.span.line}:{node.span.col})"


# Spark's Kafka source options its real-time mode refuses (KafkaSourceProvider: "... is not compatible with real time
# mode"), lower-cased
SOURCE_REFUSED = frozenset({"maxoffsetspertrigger", "minoffsetspertrigger", "minpartitions", "endingtimestamp",
                            "maxtriggerdelay"})


def _source_limits(node: Node) -> list[tuple[str, str]]:
    """A source's per-trigger limits, which real-time mode (no micro-batches to size) does not take."""
    given = ["max_offsets_per_trigger"] if getattr(node.spec, "max_offsets_per_trigger", None) else []
    given += [k for k in getattr(node.spec, "options", None) or {} if k.lower() in SOURCE_REFUSED]
    return [(f"{_at(node)} sets `{k}`, which Spark's real-time mode does not take (it reads each record as it "
             "arrives: no micro-batch to size)", f"leave out `{k}` in real-time mode") for k in given]


def _sink_problems(what: str, spec: Any) -> list[tuple[str, str]]:
    if spec.REALTIME_WRITER is None:
        return [(f"{what} is of type {spec.type}, which Spark's real-time mode cannot write", HINT)]
    out = []
    if spec.is_idempotent():
        out.append((f"{what} is written at least once in real-time mode (Spark's Kafka sink has no transactions: "
                    "a batch restarted after a failure writes its rows again), not exactly once",
                    f"say `delivery: at_least_once` on {what.split(' (')[0]}"))
    if getattr(spec, "options", None):
        out.append((f"{what} gives `options` (librdkafka names), which Spark's Kafka producer does not take",
                    "leave out `options` in real-time mode"))
    return out


def problems(graph: Graph) -> list[tuple[str, str]]:
    """What keeps the pipeline out of real-time mode: (message, hint) each; [] when it can run there."""
    out: list[tuple[str, str]] = []
    pipeline = graph.pipeline
    if getattr(pipeline, "functions", None):
        out.append(("the pipeline declares Python `functions`, which run in Python workers", HINT))
    for node in graph.nodes.values():
        spec = node.spec
        if node.kind == "source":
            if not spec.REALTIME or spec.is_static():
                out.append((f"{_at(node)} is of type {node.type}, which Spark's real-time mode cannot read", HINT))
            elif spec.event_time is not None:
                out.append((f"{_at(node)} declares `event_time`: only stateful stages use it, and real-time mode "
                            "runs none", "leave out `event_time` in real-time mode"))
            out.extend(_source_limits(node))
        elif node.kind == "transform":
            if not spec.REALTIME or spec.is_stateful():
                out.append((f"{_at(node)} is of type {node.type}"
                            + (" (it keeps state)" if spec.is_stateful() else "")
                            + ", which etl does not run in real-time mode", HINT))
            elif len([e for e in node.inputs if e.role == "input"]) != 1:
                out.append((f"{_at(node)} reads several inputs (a union), which real-time mode does not run", HINT))
            elif spec.dead_letters({}, False):
                out.append((f"{_at(node)} writes the rows it cannot process to dead letters, which a real-time "
                            "query cannot split from its output", "use rules, or expressions that cannot fail"))
        elif node.kind == "sink":
            out.extend(_sink_problems(_at(node), spec))
    sinks = graph.of_kind("sink")
    if len(sinks) > 1:
        out.append((f"{len(sinks)} sinks: a real-time pipeline writes one (each sink would read the sources again)",
                    "one pipeline per sink in real-time mode"))
    return out


def check_realtime(graph: Graph, report: Report) -> None:
    """E415 at the trigger's `mode` for each reason the pipeline cannot run in Spark's real-time mode."""
    if not realtime(graph):
        return
    span = graph.smap.value(("trigger", "mode")) if graph.smap is not None else Span(graph.name)
    for message, hint in problems(graph):
        report.error("E415", f"trigger mode realtime: {message}", span, hint)
