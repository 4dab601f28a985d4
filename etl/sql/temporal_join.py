"""Flink's event-time temporal join -> `temporal_join` (etl.components.transforms.temporal_join.spec):

    SELECT ... FROM orders [AS o] [LEFT] JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time [AS r]
    ON o.currency = r.currency [AND other conditions]

The AS OF time is the probe side's event-time (WATERMARK) column; the versioned table is a CREATE TABLE of a stream
with a PRIMARY KEY and a WATERMARK (each row a new version of its key, from its event time); the ON equalities are
exactly its primary key's columns, the other ON conditions the join's `condition` (false: no version). What cannot be
done exactly is E011 naming what to write: a versioned view (Flink's deduplicated view keeps a key's newest row by
event time: an older row arriving after a newer one is no version there), a table without a PRIMARY KEY or a
WATERMARK, equalities besides the key, a key named differently on the two sides, a dimension (static) table.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl.sql.relation import Rel, Scope, pos, sql_text
from etl.sql.script import SqlSyntax
from etl.sql.where import conjuncts

FIX = "declare the versioned table as CREATE TABLE t (..., PRIMARY KEY (k) NOT ENFORCED, WATERMARK FOR ts AS ts) " \
      "(each row a version of its key from its event time), or join the current rows with FOR SYSTEM_TIME AS OF " \
      "PROCTIME() and a dimension table"


def _unversioned(b: Any, right: Rel, name: str) -> str | None:
    """Why the table is no versioned table (Flink's rules), or None."""
    src: dict[str, Any] = next((s for s in b.sources if str(s.get("id", "")).lower() == name.lower()), {})
    if right.static or src.get("type") == "mysql" or src.get("static"):
        return f"'{name}' is a dimension table (its current rows, no versions)"
    if right.table is None:
        return (f"'{name}' is a view: Flink's versioned view (a ROW_NUMBER() deduplication keeping each key's newest "
                "row) is not one etl reads exactly (a row older than its key's newest is no version there)")
    if not right.table.primary_key:
        return f"'{name}' has no PRIMARY KEY (the key whose versions the join picks from)"
    if right.event_time is None:
        return f"'{name}' has no WATERMARK (the time from which each version is valid)"
    return None


def _keys_and_rest(joins: Any, on: exp.Expression, scope: Scope, lefts: set[str], alias: str, right: Rel,
                   name: str) -> tuple[list[str], list[exp.Expression]]:
    """The ON's equalities of the versioned table's key (the probe side's names) and its other conjuncts."""
    b = joins.b
    pk = [k.lower() for k in right.table.primary_key]
    keys: list[str] = []
    extra: list[exp.Expression] = []
    for c in conjuncts(on):
        if isinstance(c, exp.EQ) and isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column):
            a, v = c.this, c.expression
            sides = (joins._sides(scope, a, lefts, alias), joins._sides(scope, v, lefts, alias))
            if set(sides) == {"left", "right"}:
                if sides[0] == "right":
                    a, v = v, a
                if v.name.lower() not in pk:
                    raise SqlSyntax(f"an equality of '{v.name}', not a column of '{name}''s PRIMARY KEY "
                                    f"({', '.join(right.table.primary_key)})", pos(b, c), "compare the key's "
                                    "columns only, the others in a WHERE after the join", "E011")
                if a.name != v.name:
                    raise SqlSyntax(f"the key '{v.name}' of '{name}' is '{a.name}' on the probe side",
                                    pos(b, c), f"name it '{v.name}' in a view of the probe side", "E011")
                keys.append(a.name)
                continue
        extra.append(c)
    return keys, extra


def temporal(joins: Any, j: exp.Join, t: exp.Table, left: Rel, scope: Scope, base: str, how: str,
             on: exp.Expression) -> Rel:
    b = joins.b
    at = t.args["version"].expression
    name = t.name
    lefts = set(scope.entries)
    alias = t.alias or name
    side = joins._sides(scope, at, lefts, alias) if isinstance(at, exp.Column) and at.table else None
    if side != "left" or left.event_time is None or at.name.lower() != left.event_time.lower():
        what = f"'{left.event_time}'" if left.event_time else "a column with a WATERMARK"
        raise SqlSyntax(f"FOR SYSTEM_TIME AS OF {at.sql(dialect='spark')}: an event-time temporal join reads the "
                        f"probe side's event-time column ({what})", pos(b, at),
                        f"FOR SYSTEM_TIME AS OF {left.event_time or 'o.ts'} (the version valid at the row's time), "
                        "or PROCTIME() for a lookup of the current rows", "E011")
    right = b.queries.table_rel(t)
    why = _unversioned(b, right, name)
    if why is not None:
        raise SqlSyntax(f"an event-time temporal join needs a versioned table: {why}", pos(b, t), FIX, "E011")
    keys, extra = _keys_and_rest(joins, on, scope, lefts, alias, right, name)
    pk = [k.lower() for k in right.table.primary_key]
    if sorted(k.lower() for k in keys) != sorted(pk):
        raise SqlSyntax(f"a temporal join's ON compares every column of '{name}''s PRIMARY KEY "
                        f"({', '.join(right.table.primary_key)})", pos(b, on),
                        " AND ".join(f"{at.table or left.id}.{k} = {alias}.{k}" for k in right.table.primary_key),
                        "E011")
    scope.joined.append((frozenset(left.cols or ()), alias.lower(), frozenset(right.cols or ())))
    jid = b.new_id(f"{base}_temporal")
    spec: dict[str, Any] = {"id": jid, "type": "temporal_join", "inputs": [left.id, right.id], "on": keys,
                            "how": how}
    for key, rel in (("left_time", left), ("right_time", right)):
        if rel.wm:
            spec[key] = rel.wm
    cols = None
    rename: dict[str, str] = {}
    if left.cols is not None and right.cols is not None:
        taken = {c.lower() for c in left.cols}  # as etl.components.transforms.temporal_join.build renames
        rename = {c: (f"{right.id}_{c}" if c.lower() in taken else c) for c in right.cols if c not in keys}
        cols = left.cols + [rename[c] for c in right.cols if c not in keys]
    elif extra:
        raise SqlSyntax("a temporal join condition besides the key needs both sides' columns known",
                        pos(b, extra[0]), "join tables whose columns are declared", "E011")
    for k in keys:
        rename[k] = k
    scope.add(alias, right, rename)
    joins._padded(scope, how, lefts, alias, left, right, rename, keys)
    conds = [b.queries.resolve(c.copy(), scope) for c in extra]
    if conds:
        spec["condition"] = " AND ".join(sql_text(c, paren=True) for c in conds)
    i = b.add_transform(spec, pos(b, j))
    if conds:
        b.note_expr(("transforms", i, "condition"), conds)
    return replace(left, id=jid, cols=cols, table=None, static=False)
