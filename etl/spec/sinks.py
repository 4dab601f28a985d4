"""Column checks several sinks share: a message key expression (kafka, rocketmq), key and id columns (mysql,
elasticsearch); etl/components/sinks/<type>/spec.py holds each sink."""

from __future__ import annotations

from typing import Any


def key_expr(spec: Any, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
    """The input's columns, after checking the message key expression."""
    cols = cx.first(inputs)
    if spec.key is not None:
        cx.expr(node, ("key",), spec.key, cols, cx.where(node, "key"))
    return cols


def named_columns(cx: Any, node: Any, inputs: list, field: str, names: list[str]) -> dict[str, str] | None:
    """The input's columns, after checking that each of `names` (the sink's `field`) is one of them."""
    cols = cx.first(inputs)
    for i, name in enumerate(names):
        cx.need(cols, name, cx.span(node, field, i), cx.where(node, f"{field}[{i}]"))
    return cols
