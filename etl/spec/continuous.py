"""Continuously updated results, the core's questions about them: does a node update keys, which node of a
graph feeds a node updates (the `aggregate` transform itself: etl.components.transforms.aggregate)."""

from __future__ import annotations

from typing import Any

from etl import registry

UPDATE, RETRACT = "_update", "_retract"


def updates_keys(node: Any) -> bool:
    """Are `node`'s rows updates of keys: a continuous `aggregate` or `top_n`, a `dedupe` keeping the last row, a
    window with early rows or late updates (a node whose spec did not validate: as its class says)?"""
    spec = registry.traits_of(node.spec)
    if spec is node.spec:
        return spec.updates_keys()
    return bool(getattr(spec, "UPDATES_KEYS", False))  # not validated: its class's answer


def updating_input(graph: Any, node: Any, memo: dict[str, Any] | None = None) -> Any:
    """The node whose rows are updates of keys (updates_keys) that `node` reads through transforms of one input
    that keep them updates (filter, derive, select, parse ...), if any. `memo` (node id -> answer), shared by the
    calls over one graph, makes them linear in all: every node a walk passes through has the walk's answer."""
    path: list[str] = []
    found = None
    while True:
        if memo is not None and node.id in memo:
            found = memo[node.id]
            break
        path.append(node.id)
        ins = [e for e in node.inputs if e.role == "input"]
        if len(ins) != 1:
            break
        up = graph.nodes.get(ins[0].src)
        if up is None:
            break
        if updates_keys(up):
            found = up
            break
        if up.kind == "source" or not getattr(registry.traits_of(up.spec), "PASSES_UPDATES", True):
            break
        node = up
    if memo is not None:
        memo.update(dict.fromkeys(path, found))
    return found
