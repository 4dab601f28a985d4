"""Semantic checks over the graph, beyond what the schema can say."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from etl.diagnostics import Report
from etl.graph.model import Graph


def _resolve(base_dir: str, path: str) -> str:
    p = Path(path)
    return str(p if p.is_absolute() else (Path(base_dir) / p).resolve())


def check_unused(graph: Graph, report: Report) -> None:
    used = {e.src for n in graph.nodes.values() for e in n.inputs}
    for node in graph.nodes.values():
        if node.id in used or node.kind == "sink":
            continue
        if node.kind == "source":
            report.warning("W204", f"source '{node.id}' is not used by any transform or sink", node.span,
                           "remove it or add it to some component's inputs")
        else:
            report.warning("W206", f"output of transform '{node.id}' is not used", node.span,
                           "send it to a sink or remove the transform")


def check_outputs(graph: Graph, report: Report) -> None:
    """No two sinks may write the same resource."""
    seen: dict[str, Any] = {}
    sinks = list(graph.of_kind("sink"))
    dl = getattr(graph.pipeline, "dead_letter", None)
    for node in sinks:
        key = node.spec.output_key()
        if key is None:
            continue
        if key.startswith("path:"):
            key = "path:" + _resolve(graph.base_dir, key[5:])
        if key in seen:
            report.error("E330", f"sinks '{seen[key].id}' and '{node.id}' write the same output ({key.split(':', 1)[1]})",
                         node.span, "give each sink its own path, table, topic or index")
        else:
            seen[key] = node
    if dl is not None and dl.output_key() is not None:
        key = dl.output_key()
        if key.startswith("path:"):
            key = "path:" + _resolve(graph.base_dir, key[5:])
        if key in seen and graph.smap is not None:
            report.error("E330", f"dead_letter writes the same output as sink '{seen[key].id}'",
                         graph.smap.value(("dead_letter",)), "give the dead-letter sink its own path")


def check_graph(graph: Graph, report: Report, doc: Any = None) -> Graph:
    """Run every graph check; returns the graph (with columns filled in where known)."""
    check_unused(graph, report)
    check_outputs(graph, report)
    return graph


def checkpoint_dir(graph: Graph) -> str:
    configured = graph.pipeline.checkpoint.path
    if configured:
        return _resolve(graph.base_dir, configured)
    return str((Path(".etl") / graph.name / "checkpoint").resolve())


def check_across(results: Iterable[Any]) -> None:
    """Checks between pipelines validated together: no shared checkpoint or output path."""
    seen_ckpt: dict[str, Any] = {}
    seen_out: dict[str, Any] = {}
    for r in results:
        if r.graph is None:
            continue
        ck = checkpoint_dir(r.graph)
        span = r.graph.smap.value(("checkpoint",)) if r.graph.smap else None
        if ck in seen_ckpt:
            r.report.error("E331", f"checkpoint folder {ck} is also used by pipeline '{seen_ckpt[ck].graph.name}' "
                           f"({seen_ckpt[ck].file})", span or r.graph.nodes[next(iter(r.graph.nodes))].span,
                           "give each pipeline its own `checkpoint` (or a distinct `name`)")
        else:
            seen_ckpt[ck] = r
        for node in r.graph.of_kind("sink"):
            key = node.spec.output_key()
            if key is None:
                continue
            if key.startswith("path:"):
                key = "path:" + _resolve(r.graph.base_dir, key[5:])
            other = seen_out.get(key)
            if other is not None and other[0] is not r:
                r.report.error("E330", f"sink '{node.id}' writes the same output as sink '{other[1]}' of "
                               f"{other[0].file}", node.span, "give each sink its own path, table, topic or index")
            else:
                seen_out.setdefault(key, (r, node.id))
