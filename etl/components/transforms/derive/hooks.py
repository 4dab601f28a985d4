"""The derive transform's column propagation (each expression checked against the columns before it)."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


class DeriveHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        for name, text in self.columns.items():
            cx.internal(node, name, cx.key_span(node, "columns", name))
            cx.expr(node, ("columns", name), text, cols, cx.where(node, f"columns.{name}"))
            if cols is not None:
                existing = cx.find(cols, name)
                typ = cx.guess_type(text, cols)
                if existing is not None and existing != name:
                    del cols[existing]
                cols[existing or name] = typ
        return cols

    def explain_lines(self: Any) -> list[str]:
        return [f"{k} = {v}" for k, v in self.columns.items()]
