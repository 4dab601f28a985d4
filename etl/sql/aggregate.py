"""GROUP BY without a window -> an `aggregate` transform: a continuously updated aggregate (etl.spec.continuous).

    SELECT k, COUNT(*) AS n, SUM(x) FROM t [WHERE ...] GROUP BY k [HAVING ...]

Aggregates and HAVING as in a windowed GROUP BY (etl.sql.window). The aggregate's rows are
updates of their key; its flag columns (`_update`, `_retract` with HAVING) are hidden from `*`
and from INSERT's column mapping (Rel.flags): an INSERT into a sink that upserts by a key (a db
or es table with a PRIMARY KEY, kafka with a key) drops them, any other sink gets them after the
table's declared columns, as a changelog. `EMIT WITH DELAY 'n' UNIT BEFORE WATERMARK` on it (or on an INSERT
reading a view of it) is the aggregate's `every`: at most one update row per key every n.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl import registry

from etl.sql.aggcalls import WINDOW_KINDS, is_aggregate, replace_aggregates, window_ref
from etl.sql.division import aggregate_types
from etl.sql.relation import Rel, pos
from etl.sql.script import SqlSyntax


def keyed(sink: dict) -> bool:
    """Does this sink spec replace a key's earlier row (upsert), rather than append rows? (its spec's keyed_mapping)"""
    entry = registry.entries("sink").get(str(sink.get("type")))
    return entry is not None and bool(entry.spec.keyed_mapping(sink))  # type: ignore[attr-defined]


def no_updates(b: Any, rel: Rel, node: exp.Expression | None, what: str) -> None:
    """E011 for a stateful stage (window, join, dedupe, aggregate) over a continuous aggregate's updates."""
    if rel.flags:
        raise SqlSyntax(f"{what} over the updates of a continuous aggregate (GROUP BY without a window) is not "
                        "supported", pos(b, node), "window or join the input first, then aggregate", "E011")


def emit_every(emit: dict) -> str:
    """EMIT WITH DELAY 'n' UNIT BEFORE WATERMARK on a GROUP BY without a window -> the aggregate's `every`: at most
    one update row per key every n (rsqldb's EMIT on a non-window aggregate: how often updated rows go out)."""
    if "late_span" in emit:
        raise SqlSyntax("EMIT ... AFTER WATERMARK on a GROUP BY without a window: no window closes, so no row of it "
                        "is ever final and there is nothing to update after the watermark", emit["late_span"],
                        "write EMIT WITH DELAY 'n' UNIT BEFORE WATERMARK: at most one update row per key every n",
                        "E011")
    return str(emit["early"])


def compile_aggregate(qc: Any, q: exp.Select, rel: Rel, scope: Any, base: str, out_names: list[str] | None,
                      emit: dict | None) -> Rel:
    b = qc.b
    no_updates(b, rel, q.args.get("group") or q, "GROUP BY")
    group = [qc.resolve(g, scope) for g in (q.args["group"].expressions if q.args.get("group") else [])]
    rel, items, cond = derive_inputs(qc, q, rel, scope, base, group)
    keys: list[str] = []
    for g in group:
        if not isinstance(g, exp.Column):
            raise SqlSyntax("a GROUP BY key reads a window's start or end, but there is no window", pos(b, g),
                            code="E011")
        keys.append(g.name)
    aggs: list[dict] = []
    items = [(alias, replace_aggregates(b, body, aggs, alias, top=True)) for alias, body in items]
    items = [(alias or (body.name if isinstance(body, exp.Column) else None), body) for alias, body in items]
    spec: dict[str, Any] = {"id": None, "type": "aggregate", "inputs": [rel.id]}
    if keys:
        spec["group_by"] = keys
    having = q.args.get("having")
    cond = replace_aggregates(b, cond, aggs, None, top=False) if cond is not None else None
    if not aggs:
        raise SqlSyntax("a GROUP BY needs at least one aggregate (COUNT(*), SUM(x), ...)", pos(b, q), code="E104")
    spec["aggregates"] = aggs
    if cond is not None:
        spec["having"] = cond.sql(dialect="spark")
    if emit:
        spec["every"] = emit_every(emit)
    spec["id"] = aid = b.new_id(f"{base}_aggregate")
    i = b.add_transform(spec, pos(b, q.args.get("group") or q))
    if emit:
        b.smap.put(("transforms", i, "every"), emit["span"])
    if having is not None:
        b.note_expr(("transforms", i, "having"), [having])
    flags = ("_update", "_retract") if having is not None else ("_update",)
    b.set_types(aid, aggregate_types(keys, aggs, b.scope_types(scope)))
    return qc.project(Rel(aid, keys + [a["as"] for a in aggs], flags=flags), items, base, out_names, pos(b, q))


# C901: one branch per Flink aggregate form, each with its error position
def derive_inputs(qc: Any, q: exp.Select, rel: Rel, scope: Any, base: str,  # noqa: C901
                  group: list) -> tuple[Rel, list, exp.Expression | None]:
    """Expressions in GROUP BY keys and in aggregates' arguments -> columns of one `derive` before the
    window / aggregate (as Flink computes them in place). A key is named by its SELECT alias when the
    SELECT lists it (`lower(c) AS c`; not when that replaces a column read elsewhere), otherwise
    `_key<i>`; an aggregate's argument is `_agg<i>`. `group` is updated in place; returns the input,
    the SELECT items (alias, body) and HAVING, their expressions replaced by the columns."""
    b = qc.b
    items = []
    for e in q.expressions:
        body = qc.resolve(e.this if isinstance(e, exp.Alias) else e, scope)
        if isinstance(body, exp.Star):
            raise SqlSyntax("SELECT * with GROUP BY: list the keys and aggregates", pos(b, e), code="E011")
        items.append((e.alias if isinstance(e, exp.Alias) else None, body))
    having = q.args.get("having")
    cond = qc.resolve(having.this, scope) if having is not None else None
    cols: dict[str, exp.Expression] = {}

    def window(n: exp.Expression) -> bool:  # window_start / window_end of an input (a windowed view) are columns
        return window_ref(n) and not (isinstance(n, exp.Column) and n.name in (rel.cols or []))

    def check(node: exp.Expression, what: str) -> None:
        for n in node.find_all(exp.Expression):
            if is_aggregate(b, n):
                raise SqlSyntax(f"{what} holds an aggregate: aggregates do not nest", pos(b, n),
                                "aggregate the inner one in a view first", "E011")
            if window(n):
                raise SqlSyntax(f"{what} reads the window's start or end: they exist only after the window",
                                pos(b, n), code="E011")

    keys: dict[str, str] = {}  # key expression's SQL -> its column
    for i, g in enumerate(group):
        if isinstance(g, exp.Column) or window(g) or (isinstance(g, exp.Anonymous) and g.name.upper() in WINDOW_KINDS):
            continue
        check(g, "a GROUP BY key")
        others = [x for _, x in items if x.sql() != g.sql()] + [x for x in group if x is not g] + [cond]
        reads = {c.name for x in others if x is not None for c in x.find_all(exp.Column)}
        name = next((a for a, x in items if a and x.sql() == g.sql() and a not in cols
                     and a not in reads), f"_key{len(keys)}")
        cols[name], keys[g.sql()] = g, name
        group[i] = exp.column(name)

    def fix(n: exp.Expression) -> exp.Expression:
        if n.sql() in keys:
            return exp.column(keys[n.sql()])
        if not is_aggregate(b, n):
            return n
        holder, key = n, "this"
        if isinstance(n, exp.Count) and isinstance(n.this, exp.Distinct) and len(n.this.expressions) == 1:
            holder, key = n.this, "expressions"
        elif isinstance(n, exp.Anonymous):
            key = "expressions"
        arg = holder.args.get(key)
        arg = arg[0] if isinstance(arg, list) and len(arg) == 1 else arg
        if arg is None or isinstance(arg, (exp.Column, exp.Star, list, exp.Distinct)):
            return n
        check(arg, "an aggregate's argument")
        name = next((c for c, x in cols.items() if c.startswith("_agg") and x.sql() == arg.sql()), f"_agg{len(cols) - len(keys)}")
        cols[name] = arg
        holder.set(key, [exp.column(name)] if key == "expressions" else exp.column(name))
        return n

    items = [(a, x.transform(fix, copy=False)) for a, x in items]
    cond = cond.transform(fix, copy=False) if cond is not None else None
    if not cols:
        return rel, items, cond
    did = b.new_id(f"{base}_derive")
    i = b.add_transform({"id": did, "type": "derive", "inputs": [rel.id],
                         "columns": {c: x.sql(dialect="spark") for c, x in cols.items()}}, pos(b, q))
    for c, x in cols.items():
        b.note_expr(("transforms", i, "columns", c), [x])
    new = [c for c in cols if c not in (rel.cols or [])]
    return replace(rel, id=did, cols=None if rel.cols is None else rel.cols + new), items, cond
