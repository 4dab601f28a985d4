"""Effective delivery guarantee of each sink, from source replayability and sink idempotency.

How a sink handles a replayed batch is declared by its spec (`REPLAY`, etl.spec.base.SinkBase)."""

from __future__ import annotations

from typing import Any

from etl.graph.model import Graph, Node
from etl.graph.realtime import realtime
from etl.plan.ir import Delivery
from etl.spec.continuous import updating_input


REALTIME_DELIVERY = ("real-time mode: Spark's Kafka sink writes each row as it is read, without transactions; a batch "
                     "restarted after a failure writes its rows since the last checkpointed offsets again")


def delivery_for(graph: Graph, sink: Node) -> Delivery:
    # static tables (lookup dimensions) are re-read, not replayed: only streams decide replayability
    sources = [s for s in graph.upstream_sources(sink.id) if not s.spec.is_static()]
    not_replayable = [s.id for s in sources if not s.spec.is_replayable()]
    if not_replayable:
        return Delivery(sink.id, "at-least-once", f"source {', '.join(not_replayable)} cannot replay")
    if realtime(graph):
        return Delivery(sink.id, "at-least-once", REALTIME_DELIVERY)
    if not sink.spec.is_idempotent():
        configured = getattr(sink.spec, "delivery", None)
        if configured == "at_least_once":
            return Delivery(sink.id, "at-least-once", f"{sink.type} sink configured with delivery: at_least_once")
        why = sink.spec.replay_note() or "a replayed batch is written again"
        return Delivery(sink.id, "at-least-once", f"{sink.type} sink is not idempotent: {why}")
    how = sink.spec.replay_note()
    return Delivery(sink.id, "exactly-once",
                    f"replayable sources ({', '.join(s.id for s in sources)}) + idempotent {sink.type} sink "
                    "keyed by (pipeline, sink, batch id)" + (f"; {how}" if how else ""))



def changes_for(graph: Graph, sink: Node, memo: dict[str, Any] | None = None) -> str | None:
    """How `sink` takes the updates of a continuous aggregate (or TopN, keep-last dedupe, updating window) upstream: upserted by its key, or appended
    (a changelog); None when it reads no updating node. `memo`: etl.spec.continuous.updating_input's, per graph."""
    up = updating_input(graph, sink, memo)
    if up is None:
        return None
    keys = up.spec.update_keys()
    how = sink.spec.upsert_key()
    if how is not None:
        return f"updates of {up.id} (keyed by {keys}): {how}, the latest row per key is kept"
    flags = up.spec.update_flags()
    if not flags:  # a keep-last dedupe
        return (f"updates of {up.id} (keyed by {keys}) appended: every row is its key's newest so far, "
                "replacing the key's earlier rows")
    cols = graph.columns.get(sink.id)
    kept = [f for f in flags if cols is None or f in dict(cols)]
    return (f"updates of {up.id} (keyed by {keys}) appended as a changelog: every row of a key is written, "
            + (f"flagged by {' and '.join(kept)}" if kept else "without its flags (not among the sink's columns)"))
