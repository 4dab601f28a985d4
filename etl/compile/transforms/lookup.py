"""lookup: dimension-table enrichment comes in a later issue."""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext, not_supported
from etl.graph.model import Node


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    raise not_supported(node, "lookup transform")
