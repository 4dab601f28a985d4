"""Names every output shows: the pipeline name and the component ids may not hold a value read from the environment.

They are public: metrics labels, the run file, the checkpoint and log paths, query names, Spark's UI, explain.
The redaction (etl.secrets) would show such a name as `***` in some outputs and cannot reach others (a
folder name on disk), so validate refuses it, at its position, without printing the value.
"""

from __future__ import annotations

from collections.abc import Iterable

from etl.diagnostics import Report
from etl.graph.model import Graph
from etl.secrets import MIN_TEXT

HINT = ("the pipeline name and component ids are public (metrics labels, run file, checkpoint path, explain): "
        "write them literally or take them from vars (`{{ vars.NAME }}`, --var NAME=VALUE), not from env()")


def holds_secret(text: str, values: Iterable[str]) -> bool:
    """Does `text` hold one of `values`, as the redaction sees it: a value of MIN_TEXT characters or more anywhere
    in it (any letter case), a shorter one (which could be any word) only as the whole text."""
    low = text.strip().lower()
    return any(v in low if len(v) >= MIN_TEXT else v == low for v in (x.strip().lower() for x in values) if v)


def check_public_names(graph: Graph, report: Report, secrets: Iterable[str]) -> None:
    """E102 at the pipeline's name and at each component id that holds a value the file read with env()."""
    values = [v for v in secrets if isinstance(v, str) and v.strip()]
    if not values:
        return
    smap = graph.smap
    if holds_secret(graph.name, values) and smap is not None:
        report.error("E102", "the pipeline name holds a value read from the environment with env()",
                     smap.value(("name",)), HINT)
    for node in graph.nodes.values():
        if holds_secret(node.id, values):
            report.error("E102", f"the id of {node.kind} #{_index(node.path)} holds a value read from the "
                         "environment with env()", node.field_span(smap, "id"), HINT)


def _index(path: tuple) -> int:
    return path[1] + 1 if len(path) > 1 and isinstance(path[1], int) else 1
