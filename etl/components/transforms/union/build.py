"""union: merge inputs by column name (a column missing on one side is NULL there)."""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext
from etl.compile.unions import union_by_name
from etl.graph.model import Node


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    return union_by_name(inputs)
