"""Late events of a window: the watermark an event is compared with, as `etl explain` says it.

etl's state engine compares an event with the current watermark, W(N) during micro-batch N (the latest event time
of the batches before N, minus the allowed lateness): Flink's and RocketMQ Streams' rule (etl.compile.windows.
state). Spark's streaming aggregation (the native engine) filters late rows with the previous micro-batch's
watermark, W(N-1) (SPARK-40925, so that it can chain stateful operators in one query): an event arriving in the
micro-batch right after the watermark passed its window's end is still counted there; a later one is dropped.

etl keeps Spark's rule on the native engine, on purpose. Spark's watermark is the latest event time over all of a
batch's partitions, not Flink's per-partition minimum, so W(N) drops in-order events of a partition read behind the
others: measured with `spark.sql.streaming.statefulOperator.allowMultiple` off (which makes Spark use W(N)), the
Kafka (3 partitions) -> window -> MySQL kill -9 test (tests/integration/test_kafka_mysql_exactly_once.py) lost
events of 4 of its windows; with W(N-1) it writes the oracle's rows. The one batch of slack is what stands in for
Flink's per-partition watermarks; a pipeline that needs Flink's exact rule uses the state engine (`emit: {late:
dead_letter}` makes the late events visible, etl.compile.windows.native documents both).
"""

from __future__ import annotations

from etl.graph.model import Graph, Node
from etl.physical.grouping import stateful, streamed

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
    if engine != "native":
        return ("late events: an event whose window ended at or before the current watermark is late (Flink's "
                "rule; the state engine's processor)")
    held = f"; its query also holds {', '.join(others)}" if others else ""
    return (f"late events: compared with the previous micro-batch's watermark (Spark's rule{held}): an event "
            "arriving in the micro-batch right after the watermark passed its window's end is still counted; a "
            "later one is dropped")
