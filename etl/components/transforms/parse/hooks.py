"""The parse transform's column propagation (the parsed fields it adds)."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


class ParseHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cx.check_types(node, self.schema_)
        for name in self.schema_:
            cx.internal(node, name, cx.key_span(node, "schema", name))
        cols = cx.first(inputs)
        found = cx.need(cols, self.field, cx.span(node, "field"), cx.where(node, "field"))
        if cols is None:
            return None
        if not self.keep_original and found is not None:
            cols.pop(found, None)
        for name, typ in self.schema_.items():
            cols[cx.find(cols, name) or name] = typ
        return cols

    def explain_lines(self: Any) -> list[str]:
        return [f"{self.field} as {self.format}" + ("" if self.keep_original else f" (drops {self.field})"),
                f"on error: {self.on_error}"]
