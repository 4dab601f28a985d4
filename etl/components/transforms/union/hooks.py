"""The union transform's column propagation (the inputs' columns, by name)."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


class UnionHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        if not inputs or any(c is None for _, c in inputs):
            return None
        out: Cols = {}
        for _, c in inputs:
            for k, v in c.items():
                if cx.find(out, k) is None:
                    out[k] = v
        for e, c in inputs:
            missing = [k for k in out if cx.find(c, k) is None]
            if missing:
                cx.report.warning("W312", f"input '{e.ref}' of union '{node.id}' lacks column"
                                  f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} (filled with null)",
                                  e.span or node.span, "give every input of a union the same columns")
        return out

    def explain_lines(self: Any) -> list[str]:
        return []
