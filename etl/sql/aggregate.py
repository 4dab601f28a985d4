"""GROUP BY without a window -> an `aggregate` transform: a continuously updated aggregate (etl.spec.continuous).

    SELECT k, COUNT(*) AS n, SUM(x) FROM t [WHERE ...] GROUP BY k [HAVING ...]

Aggregates and HAVING as in a windowed GROUP BY (etl.sql.window). The aggregate's rows are
updates of their key; its flag columns (`_update`, `_retract` with HAVING) are hidden from `*`
and from INSERT's column mapping (Rel.flags): an INSERT into a sink that upserts by a key (a db
or es table with a PRIMARY KEY, kafka with a key) drops them, any other sink gets them after the
table's declared columns, as a changelog.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from etl.sql.query import Rel, pos
from etl.sql.script import SqlSyntax


def keyed(sink: dict) -> bool:
    """Does this sink spec replace a key's earlier row (upsert), rather than append rows?"""
    t = sink.get("type")
    return bool((t == "mysql" and sink.get("mode") == "upsert" and sink.get("key"))
                or (t == "elasticsearch" and sink.get("id_fields")) or (t == "kafka" and sink.get("key")))


def no_updates(b: Any, rel: Rel, node: exp.Expression | None, what: str) -> None:
    """E011 for a stateful stage (window, join, dedupe, aggregate) over a continuous aggregate's updates."""
    if rel.flags:
        raise SqlSyntax(f"{what} over the updates of a continuous aggregate (GROUP BY without a window) is not "
                        "supported", pos(b, node), "window or join the input first, then aggregate", "E011")


def compile_aggregate(qc: Any, q: exp.Select, rel: Rel, scope: Any, base: str, out_names: list[str] | None,
                      emit: dict | None) -> Rel:
    from etl.sql.window import _replace

    b = qc.b
    no_updates(b, rel, q.args.get("group") or q, "GROUP BY")
    if emit:
        raise SqlSyntax("EMIT applies to a windowed GROUP BY: a GROUP BY without a window writes an update per "
                        "changed key after each micro-batch", emit["span"], "remove EMIT", "E011")
    group = [qc.resolve(g, scope) for g in (q.args["group"].expressions if q.args.get("group") else [])]
    keys: list[str] = []
    for g in group:
        if not isinstance(g, exp.Column):
            raise SqlSyntax("GROUP BY keys are columns: compute expressions in a view first", pos(b, g), code="E011")
        keys.append(g.name)
    aggs: list[dict] = []
    items = []
    for e in q.expressions:
        alias = e.alias if isinstance(e, exp.Alias) else None
        body = qc.resolve(e.this if isinstance(e, exp.Alias) else e, scope)
        if isinstance(body, exp.Star):
            raise SqlSyntax("SELECT * with GROUP BY: list the keys and aggregates", pos(b, e), code="E011")
        body = _replace(b, body, aggs, alias, top=True)
        items.append((alias or (body.name if isinstance(body, exp.Column) else None), body))
    spec: dict[str, Any] = {"id": None, "type": "aggregate", "inputs": [rel.id]}
    if keys:
        spec["group_by"] = keys
    having = q.args.get("having")
    cond = _replace(b, qc.resolve(having.this, scope), aggs, None, top=False) if having is not None else None
    if not aggs:
        raise SqlSyntax("a GROUP BY needs at least one aggregate (COUNT(*), SUM(x), ...)", pos(b, q), code="E104")
    spec["aggregates"] = aggs
    if cond is not None:
        spec["having"] = cond.sql(dialect="spark")
    spec["id"] = aid = b.new_id(f"{base}_aggregate")
    i = b.add_transform(spec, pos(b, q.args.get("group") or q))
    if having is not None:
        b.note_expr(("transforms", i, "having"), [having])
    flags = ("_update", "_retract") if having is not None else ("_update",)
    return qc.project(Rel(aid, keys + [a["as"] for a in aggs], flags=flags), items, base, out_names, pos(b, q))
