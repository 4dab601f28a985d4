"""Late events of a window: the watermark an event is compared with.

Flink's and RocketMQ Streams' rule, which etl keeps: an event whose window ended at or before the current
watermark is late (W(N) during micro-batch N: the latest event time of the batches before N, minus the
allowed lateness). etl's state engine compares with W(N) itself (etl.compile.windows.state). Spark's streaming
aggregation (the native engine) filters late rows with the previous micro-batch's watermark, W(N-1), so that it
can chain stateful operators in one query (SPARK-40925): an event arriving in the micro-batch right after the
watermark passed its window's end is still counted, when files or messages arrive back to back. With
`spark.sql.streaming.statefulOperator.allowMultiple` off it uses W(N) (IncrementalExecution's
eventTimeWatermarkForLateEvents); the setting is read when a query starts, so etl turns it off for the queries
whose only stateful component is a native window (etl.runtime.runner) and keeps Spark's rule where a window
shares its query with another stateful component (a join, a dedupe, another window upstream: Spark refuses
several stateful operators in one query without it). `etl explain` says which rule each window follows.
"""

from __future__ import annotations

from etl.graph.model import Graph, Node
from etl.physical.grouping import stateful, streamed

ALLOW_MULTIPLE = "spark.sql.streaming.statefulOperator.allowMultiple"


def late_rules(graph: Graph, window_engines: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """Each window's (id -> engine) other stateful components in its query's streaming plan (its upstream): none
    means its late events are compared with the current watermark. One pass over the graph's topological order."""
    above: dict[str, tuple[str, ...]] = {}  # the stateful nodes upstream of each node (the first few: for explain)
    for node in graph.nodes.values():
        got: list[str] = []
        for e in node.inputs:
            src = graph.nodes.get(e.src)
            if src is None or not streamed(src):
                continue
            for nid in ((src.id,) if _keeps_state(src) else ()) + above.get(src.id, ()):
                if nid not in got and len(got) < 3:
                    got.append(nid)
        above[node.id] = tuple(got)
    return {nid: above.get(nid, ()) for nid in window_engines}


def _keeps_state(node: Node) -> bool:
    """A stateful operator in Spark's plan: a stateful node but a lookup, a root for its several inputs only (its
    STATE_WHY), whose table is read by a join without state."""
    return stateful(node) and node.spec.STATE_WHY != "several inputs"


def explain_line(engine: str, others: tuple[str, ...]) -> str:
    """`etl explain`'s line under a window's engine: which watermark its late events are compared with."""
    if engine != "native" or not others:
        how = ("Spark's aggregation with statefulOperator.allowMultiple off for its query" if engine == "native"
               else "the state engine's processor")
        dropped = " and dropped" if engine == "native" else ""
        return (f"late events: an event whose window ended at or before the current watermark is late{dropped} "
                f"(Flink's rule; {how})")
    return ("late events: compared with the previous micro-batch's watermark (Spark's rule: its query also holds "
            f"{', '.join(others)}): an event arriving in the micro-batch right after the watermark passed its "
            "window's end is still counted; a later one is dropped")
