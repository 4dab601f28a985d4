"""Aggregate calls and window references in a query's expressions (the window's and the aggregate's compilers,
etl.sql.window and etl.sql.aggregate, share them): which node is an aggregate, which reads a window's start or end,
and the rewriting of aggregates into the columns of the spec's `aggregates`."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from etl.sql.relation import pos
from etl.sql.script import SqlSyntax

WINDOW_KINDS = {"TUMBLE": "tumbling", "HOP": "sliding", "CUMULATE": "cumulating", "SESSION": "session"}
AGG_FUNCTIONS = {"Sum": "sum", "Avg": "avg", "Min": "min", "Max": "max", "ApproxDistinct": "approx_count_distinct",
        "ArrayAgg": "collect_list", "ArrayUniqueAgg": "collect_set", "First": "first", "Last": "last",
        "FirstValue": "first", "LastValue": "last"}


def replace_aggregates(b: Any, node: exp.Expression, aggs: list[dict], alias: str | None, top: bool) -> exp.Expression:
    """Aggregates -> columns named by their `as`; window start/end functions -> window_start/window_end."""
    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Anonymous):
            name = n.name.upper()
            if name.endswith("_START") and name.split("_")[0] in WINDOW_KINDS:
                return exp.column("window_start")
            if name.endswith(("_END", "_ROWTIME")) and name.split("_")[0] in WINDOW_KINDS:
                return exp.column("window_end")
        agg = _aggregate(b, n)
        if agg is None:
            return n
        if agg.pop("distinct", False):  # exact COUNT(DISTINCT x): the set of values, then its size
            agg["as"] = f"_distinct_{agg['field']}"
            if agg not in aggs:
                aggs.append(agg)
            return exp.Anonymous(this="size", expressions=[exp.column(agg["as"])])
        for a in aggs:
            same = {k: v for k, v in a.items() if k != "as"} == agg
            if same and (not (top and n is node) or alias in (None, a["as"])):
                return exp.column(a["as"])
        if top and n is node and alias:
            agg["as"] = alias
        else:
            agg["as"] = _name(agg, aggs) if top and n is node else f"_agg{len(aggs)}"
        aggs.append(agg)
        return exp.column(agg["as"])

    return node.transform(fix, copy=False)


def is_aggregate(b: Any, n: exp.Expression) -> bool:
    """Is this node an aggregate call (one the window / aggregate computes)?"""
    return isinstance(n, exp.Count) or type(n).__name__ in AGG_FUNCTIONS or (
        isinstance(n, exp.Anonymous) and b.udf(n.name, "aggregate") is not None)


def window_ref(n: exp.Expression) -> bool:
    """Does this node read a window's start or end (TUMBLE_START(...), window_start of a window TVF)?"""
    if isinstance(n, exp.Anonymous):
        return "_" in n.name and n.name.upper().split("_")[0] in WINDOW_KINDS
    return isinstance(n, exp.Column) and n.name.lower() in ("window_start", "window_end")


def _name(agg: dict, aggs: list[dict]) -> str:
    name = agg["fn"] if "field" not in agg else f"{agg['fn']}_{agg['field']}"
    taken = {a["as"] for a in aggs}
    return name if name not in taken else f"{name}_{len(aggs)}"


def _aggregate(b: Any, n: exp.Expression) -> dict | None:
    if isinstance(n, exp.Count):
        arg = n.this
        if arg is None or isinstance(arg, exp.Star):
            return {"fn": "count"}
        if isinstance(arg, exp.Distinct):
            cols = arg.expressions
            if len(cols) != 1 or not isinstance(cols[0], exp.Column):
                raise SqlSyntax("COUNT(DISTINCT ...) takes one column", pos(b, n), code="E011")
            return {"fn": "collect_set", "field": cols[0].name, "distinct": True}
        return {"fn": "count", "field": _col(b, arg, n)}
    if isinstance(n, exp.Anonymous) and b.udf(n.name, "aggregate") is not None:  # a Python aggregate function
        if len(n.expressions) != 1:
            raise SqlSyntax(f"aggregate function '{n.name}' takes one column", pos(b, n), code="E352")
        return {"fn": n.name, "field": _col(b, n.expressions[0], n)}
    fn = AGG_FUNCTIONS.get(type(n).__name__)
    if fn is None:
        return None
    return {"fn": fn, "field": _col(b, n.this, n)}


def _col(b: Any, arg: Any, n: exp.Expression) -> str:
    if isinstance(arg, exp.Column):
        return arg.name
    raise SqlSyntax("an aggregate reads a column: compute the expression in a view first", pos(b, n), code="E011")
