"""GROUPING SETS, ROLLUP and CUBE of a window aggregation (Flink's window TVF aggregation):

    SELECT window_start, window_end, supplier_id, SUM(price) AS price
    FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
    GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), ())

is the UNION ALL of one window aggregation per grouping set, the keys a set does not hold NULL in its rows
(Flink: "references to the grouping columns ... are replaced by null values in result rows for grouping sets in
which those columns do not appear"). ROLLUP (a, b) is the sets (a, b), (a), (); CUBE (a, b) every subset. Keys
outside them (window_start, window_end, k) are in every set. Each set is a `window` of its own (its own state)
and a `union` merges their rows; GROUPING(a, b) / GROUPING_ID(a, b) is each set's constant bit vector (a 1 for an
argument the set does not group by, the first argument the highest bit). Grouping sets of a GROUP BY without a window
table function (a continuous aggregate, or the legacy TUMBLE(ts, i) group window, which Flink does not allow
them on) are E011.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from typing import Any, cast
from collections.abc import Callable

from sqlglot import exp

from etl.sql.relation import Rel, pos
from etl.sql.script import SqlSyntax

_SETS = (exp.GroupingSets, exp.Rollup, exp.Cube)


def grouping_sets(group: exp.Group | None) -> list[list[exp.Expression]] | None:
    """The grouping sets a GROUP BY lists (each with the plain keys), or None when it has none."""
    if group is None or not any(isinstance(g, _SETS) for g in group.expressions):
        return None
    sets: list[list[exp.Expression]] = [[g for g in group.expressions if not isinstance(g, _SETS)]]
    for g in group.expressions:
        if isinstance(g, exp.GroupingSets):
            choices = [_keys(e) for e in g.expressions]
        elif isinstance(g, exp.Rollup):
            choices = [list(g.expressions[:i]) for i in range(len(g.expressions), -1, -1)]
        elif isinstance(g, exp.Cube):
            ks = list(g.expressions)
            choices = [list(c) for r in range(len(ks), -1, -1) for c in combinations(ks, r)]
        else:
            continue
        sets = [s + c for s in sets for c in choices]
    return sets


def _keys(e: exp.Expression) -> list[exp.Expression]:
    if isinstance(e, exp.Paren):
        return [e.this]
    if isinstance(e, exp.Tuple):
        return list(e.expressions)
    return [e]


def compile_grouping_sets(qc: Any, q: exp.Select, rel: Rel, scope: Any, base: str, out_names: list[str] | None,
                          tvf: Any, emit: dict | None, sets: list[list[exp.Expression]],
                          compile_window: Callable[..., Rel]) -> Rel:
    """One window per grouping set (`compile_window`: etl.sql.window's, which hands itself in), their union."""
    b = qc.b
    group = q.args["group"]
    at = next(g for g in group.expressions if isinstance(g, _SETS))
    if tvf is None:
        raise SqlSyntax(f"{_name(at)} of a GROUP BY without a window table function is not supported (Flink "
                        "updates each set's rows continuously; etl runs grouping sets over a window table function's "
                        "rows only)", pos(b, at), "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES)) "
                        "GROUP BY window_start, window_end, GROUPING SETS ((k), ())", "E011")
    for fn in q.find_all(exp.Grouping, exp.GroupingId):
        for arg in fn.expressions:
            if not isinstance(arg, exp.Column):
                raise SqlSyntax("GROUPING() takes the grouping sets' key columns", pos(b, arg), code="E011")
    names = {k.name.lower() for s in sets for k in s if isinstance(k, exp.Column)}
    for s in sets:
        for k in s:
            if not isinstance(k, exp.Column):
                raise SqlSyntax("a grouping set's key is a column: compute the expression in a view first", pos(b, k),
                                code="E011")
    types = {c.lower(): t for r, _ in scope.entries.values() if r.table is not None
             for c, t in r.table.schema().items()}
    rels = []
    for s in sets:
        missing = {n: types.get(n) for n in names - {k.name.lower() for k in s}}
        one = q.copy()
        one.set("group", exp.Group(expressions=[k.copy() for k in s]))
        one.set("expressions", [_nulls(_grouping(e, set(missing)), missing) for e in one.expressions])
        rels.append(compile_window(qc, one, rel, scope, base, out_names, tvf, emit))
    uid = b.new_id(f"{base}_union")
    b.add_transform({"id": uid, "type": "union", "inputs": [r.id for r in rels]}, pos(b, at))
    return replace(rels[0], id=uid, table=None, static=False)


def _grouping(item: exp.Expression, missing: set[str]) -> exp.Expression:
    """GROUPING(a, b) / GROUPING_ID(a, b) of one set's rows: the bit vector (first argument the highest bit) with a
    1 for each argument the set does not group by, a BIGINT as in Flink (Calcite's GROUPING)."""
    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, (exp.Grouping, exp.GroupingId)):
            bits = [int(a.name.lower() in missing) for a in n.expressions]
            value = sum(bit << (len(bits) - 1 - i) for i, bit in enumerate(bits))
            return exp.Cast(this=exp.Literal.number(value), to=exp.DataType.build("bigint"))
        return n

    return cast(exp.Expression, item.copy().transform(fix))


def _nulls(item: exp.Expression, missing: dict[str, str | None]) -> exp.Expression:
    """The SELECT item with the grouping keys a set does not hold as NULL of the key's type (outside aggregates),
    keeping its name."""
    body = item.this if isinstance(item, exp.Alias) else item
    name = item.alias if isinstance(item, exp.Alias) else (body.name if isinstance(body, exp.Column) else None)

    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and n.name.lower() in missing and n.find_ancestor(exp.AggFunc) is None:
            t = missing[n.name.lower()]
            return exp.Cast(this=exp.Null(), to=exp.DataType.build(t, dialect="spark")) if t else exp.Null()
        return n

    new = cast(exp.Expression, body.transform(fix))
    if new == body:
        return item
    return exp.Alias(this=new, alias=exp.to_identifier(name)) if name else new


def _name(node: exp.Expression) -> str:
    return {exp.GroupingSets: "GROUPING SETS", exp.Rollup: "ROLLUP", exp.Cube: "CUBE"}[type(node)]
