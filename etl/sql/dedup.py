"""Flink's deduplication query -> a `dedupe` transform.

    SELECT ... FROM (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY k1, k2 ORDER BY ts [ASC]) AS rn FROM t
    ) [AS x] WHERE rn = 1 [AND ...]

keeps the first row per key (within the watermark: `dedupe` drops a repeat while its
key is in state). `ORDER BY ts DESC` over the watermarked column keeps the last row:
`dedupe` with `keep: last` (a row per key that got a newer one, an update stream).
TopN (`rn <= N`, N > 1, or `rn = 1` ordered by other columns than the time attribute: a Top 1,
as Flink tells them apart) is in etl.sql.topn.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl.sql.aggregate import no_updates
from etl.sql.relation import Rel, Scope, pos
from etl.sql.script import SqlSyntax
from etl.sql.topn import compile_top_n
from etl.sql.where import conjuncts
from etl.sql.window_rows import time_of, tvf_of, window_rows


def row_number_item(sub: exp.Expression) -> exp.Alias | None:
    """The `ROW_NUMBER() OVER (...) AS rn` item of a subquery's SELECT list, if any."""
    if not isinstance(sub, exp.Subquery) or not isinstance(sub.this, exp.Select):
        return None
    for e in sub.this.expressions:
        if isinstance(e, exp.Alias) and isinstance(e.this, exp.Window) and isinstance(e.this.this, exp.RowNumber):
            return e
    return None


def _rank_limit(c: exp.Expression, rn: str) -> int | None:
    """N of `rn = N`, `rn <= N`, `rn < N + 1` (either side), or None when `c` is not about rn."""
    if not isinstance(c, (exp.EQ, exp.LTE, exp.LT, exp.GTE, exp.GT)):
        return None
    a, b = c.this, c.expression
    flipped = False
    if isinstance(b, exp.Column) and b.name.lower() == rn.lower():
        a, b, flipped = b, a, True
    if not (isinstance(a, exp.Column) and a.name.lower() == rn.lower() and isinstance(b, exp.Literal)
            and not b.is_string):
        return None
    n = int(float(b.this))
    kind: type = type(c)
    if flipped:
        flip: dict[type, type] = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.LT: exp.GT}
        kind = flip.get(kind, kind)
    if kind is exp.EQ or kind is exp.LTE:
        return n if kind is exp.LTE or n == 1 else -1
    if kind is exp.LT:
        return n - 1
    return -1


def _check_keep_last(b: Any, orders: list, rel: Rel) -> None:
    """`ORDER BY ts DESC` keeps the newest row per key: by the watermarked event-time column only."""
    et = (rel.wm or {}).get("field") or rel.event_time
    o = orders[0]
    if len(orders) > 1 or not isinstance(o.this, exp.Column) or et is None or o.this.name != et:
        what = "the processing time" if isinstance(o.this, exp.Column) and o.this.name == rel.proctime else \
            f"'{o.this.sql()}'"
        raise SqlSyntax(f"keep-last deduplication (ORDER BY ... DESC) orders by the watermarked event-time column "
                        f"only, not {what}", pos(b, o),
                        f"ORDER BY {et} DESC" if et else "declare WATERMARK FOR the time column", "E011")


def _by_time(orders: list, rel: Rel) -> bool:
    """Is `rn = 1` over these orders a deduplication (no order, or the time attribute: the watermarked event-time
    column or the processing time), not a Top 1?"""
    if not orders:
        return True
    o = orders[0]
    times = {(rel.wm or {}).get("field") or rel.event_time, rel.proctime} - {None}
    return len(orders) == 1 and isinstance(o.this, exp.Column) and o.this.name in times


def compile_dedupe(qc: Any, q: exp.Select, sub: exp.Subquery, item: exp.Alias, scope: Scope,
                   base: str) -> tuple[Rel, exp.Expression | None]:
    """(the dedupe node, what is left of the outer WHERE)."""
    b = qc.b
    win = item.this
    rn = item.alias
    where = q.args.get("where")
    rest: list = []
    limit = None
    for c in conjuncts(where.this) if where is not None else []:
        n = _rank_limit(c, rn)
        if n is None:
            rest.append(c)
        else:
            limit = n
            if n < 1:
                raise SqlSyntax(f"`{c.sql()}`: the rank is kept by {rn} = 1 (deduplication) or {rn} <= N (TopN)",
                                pos(b, c), code="E011")
    if limit is None:
        raise SqlSyntax(f"ROW_NUMBER() needs `WHERE {rn} = 1` (deduplication) or `WHERE {rn} <= N` (TopN) in the "
                        "outer query", pos(b, item), code="E011")
    order = win.args.get("order")
    orders = order.expressions if order is not None else []
    keep_last = bool(orders) and bool(orders[0].args.get("desc"))
    keys = win.args.get("partition_by") or []
    if not all(isinstance(k, exp.Column) for k in keys):
        raise SqlSyntax("ROW_NUMBER() partitions by columns: compute the expressions in a view first", pos(b, item),
                        code="E011")
    inner = sub.this.copy()
    inner.set("expressions", [e for e in inner.expressions if e.alias != rn])
    if not inner.expressions:
        inner.set("expressions", [exp.Star()])
    src = tvf_of(inner)
    rel = window_rows(qc, inner, src, keys, base) if src is not None else qc.compile(inner, base)
    tie = time_of(src) if src is not None else None
    if tie is not None and tie in (rel.cols or []) and all(o.this.name != tie for o in orders
                                                          if isinstance(o.this, exp.Column)):
        orders = [*orders, exp.Ordered(this=exp.column(tie))]  # equal rows: the earlier first (Flink: by arrival)
    no_updates(b, rel, item, "ROW_NUMBER()")
    per_window = any(k.name in rel.window for k in keys)  # TopN per window (Top 1: window deduplication)
    if per_window or limit != 1 or not _by_time(orders, rel):  # a TopN (per window, or continuous); else a dedupe
        out = compile_top_n(qc, rel, keys, orders, limit, rn, item, base, continuous=not per_window)
        scope.add(sub.alias or out.id, out)
        return out, _and(rest)
    if not keys:
        raise SqlSyntax("deduplication needs PARTITION BY columns", pos(b, item), code="E011")
    did = b.new_id(f"{base}_dedupe")
    spec = {"id": did, "type": "dedupe", "inputs": [rel.id], "keys": [k.name for k in keys]}
    if rel.wm:
        spec["event_time"] = rel.wm
    if keep_last:
        _check_keep_last(b, orders, rel)
        spec["keep"] = "last"
    b.add_transform(spec, pos(b, item))
    out = replace(rel, id=did, table=None, static=False)
    scope.add(sub.alias or did, out)
    return out, _and(rest)


def _and(conds: list) -> exp.Expression | None:
    left = None
    for c in conds:
        left = c if left is None else exp.And(this=left, expression=c)
    return left
