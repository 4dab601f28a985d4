"""Effective delivery guarantee of each sink, from source replayability and sink idempotency."""

from __future__ import annotations

from etl.graph.model import Graph, Node
from etl.plan.ir import Delivery


def delivery_for(graph: Graph, sink: Node) -> Delivery:
    # static tables (lookup dimensions) are re-read, not replayed: only streams decide replayability
    sources = [s for s in graph.upstream_sources(sink.id) if not s.spec.is_static()]
    not_replayable = [s.id for s in sources if not s.spec.is_replayable()]
    if not_replayable:
        return Delivery(sink.id, "at-least-once", f"source {', '.join(not_replayable)} cannot replay")
    if not sink.spec.is_idempotent():
        configured = getattr(sink.spec, "delivery", None)
        if configured == "at_least_once":
            return Delivery(sink.id, "at-least-once", f"{sink.type} sink configured with delivery: at_least_once")
        why = AT_LEAST_ONCE.get(sink.type, "a replayed batch is written again")
        return Delivery(sink.id, "at-least-once", f"{sink.type} sink is not idempotent: {why}")
    how = MECHANISM.get(sink.type)
    return Delivery(sink.id, "exactly-once",
                    f"replayable sources ({', '.join(s.id for s in sources)}) + idempotent {sink.type} sink "
                    "keyed by (pipeline, sink, batch id)" + (f"; {how}" if how else ""))


# How each idempotent sink keeps a replayed batch from being written twice (shown by `etl explain`).
MECHANISM = {
    "kafka": "one transaction per batch (transactional.id etl.<pipeline>.<sink>) that also writes a commit marker "
             "(batch id) to topic _etl_commits.<topic>; a replayed batch whose marker is there is skipped; "
             "readers need isolation.level=read_committed",
    "mysql": "rows and a (pipeline, sink, batch id) row of table _etl_commits in one transaction",
    "elasticsearch": "_bulk index with deterministic document ids (id_fields, else a hash of the row): "
                     "a replay overwrites the same documents",
}


# What a non-idempotent sink still does about replays (shown by `etl explain`).
AT_LEAST_ONCE = {
    "rocketmq": "no transaction across a batch; each message carries a deterministic etl_msg_id "
                "(<pipeline>:<sink>:<query>:<run>:<batch>:<row hash>) for consumers to dedup, and a replayed "
                "batch skips the messages it reads back from the topic",
}
