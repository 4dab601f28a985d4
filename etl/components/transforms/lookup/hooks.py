"""The lookup transform's column propagation and checks (keys against the dimension table's columns)."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


class LookupHooks:
    @classmethod
    def raw_refs(cls, item: dict) -> tuple[tuple[str, ...] | None, str | None]:
        table = item.get("table")
        return None, table if isinstance(table, str) else None

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        table_edge = next((e for e in node.inputs if e.role == "table"), None)
        table = cx.columns_of(table_edge.ref) if table_edge is not None else None
        for ev_col, tab_col in self.on.items():
            cx.need(cols, ev_col, cx.key_span(node, "on", ev_col), cx.where(node, "on"))
            cx.need(table, tab_col, cx.span(node, "on", ev_col), f"lookup table '{self.table}'")
        for i, f in enumerate(self.fields or []):
            cx.need(table, f, cx.span(node, "fields", i), f"lookup table '{self.table}'")
        if cols is None or table is None:
            return None
        keys = {v.lower() for v in self.on.values()}
        add = self.fields if self.fields is not None else [c for c in table if c.lower() not in keys]
        taken = {c.lower() for c in cols}  # as etl.compile.lookups: a table column whose name the events have
        for f in add:  # (case-insensitively) is renamed <table id>_<name>
            src = cx.find(table, f)
            if src is not None:
                cols[f"{self.table}_{src}" if src.lower() in taken else src] = table[src]
        return cols

    def explain_lines(self: Any) -> list[str]:
        on = ", ".join(f"{a} = {self.table}.{b}" for a, b in self.on.items())
        return [f"{self.how} lookup on {on}, store {self.store}"
                + (f", refresh {self.refresh}" if self.refresh is not None else "")]
