"""The rows of a window table function, ranked or deduplicated per window (Flink's window Top-N and window
deduplication straight over TUMBLE / HOP / CUMULATE):

    SELECT ... FROM (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end[, k] ORDER BY price DESC) AS rownum
      FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
    ) WHERE rownum <= 3

Each window's rows are final when the watermark passes its end, as a window aggregate's: the rows become a
`derive` (`_row`: a struct of the row), a `window` of the same shape collecting them (`collect_list`, per
PARTITION BY key that is a column of the table) and a `select` giving one row per collected row with
window_start, window_end and window_time (window_end - 1 ms, Flink's), which the `top_n` of etl.sql.topn ranks
per window (the window closes all its rows in one micro-batch). A window's rows are kept in state until it
closes, as Flink's window rank operator keeps them.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from etl.sql.relation import Rel, Scope, has_agg, pos, quote_name
from etl.sql.script import SqlSyntax
from etl.sql.window import WINDOW_ARGS, frame


def tvf_of(q: exp.Expression) -> exp.Table | None:
    """The `TABLE(TUMBLE(...))` a SELECT without GROUP BY or aggregates reads, if it reads one."""
    if not isinstance(q, exp.Select) or q.args.get("group") or has_agg(q):
        return None
    frm = q.args.get("from_") or q.args.get("from")
    src = frm.this if frm is not None else None
    if isinstance(src, exp.Table) and isinstance(src.this, exp.Anonymous) and src.this.name.upper() == "TABLE":
        return src
    return None


def time_of(src: exp.Table) -> str | None:
    """The time column a window table function's DESCRIPTOR names."""
    args = src.this.expressions[0].expressions if src.this.expressions else []
    desc = args[1] if len(args) > 1 else None
    if isinstance(desc, exp.Anonymous) and desc.expressions and isinstance(desc.expressions[0], exp.Column):
        return desc.expressions[0].name
    return None


def window_rows(qc: Any, q: exp.Select, src: exp.Table, keys: list, base: str) -> Rel:
    """The relation of the window table function's rows (the table's columns, window_start, window_end,
    window_time) with the SELECT list of `q` applied: each window's rows come out when it closes."""
    b = qc.b
    scope = Scope()
    rel, tvf = qc._from(src, scope, base)
    joins = q.args.get("joins") or []
    if joins:
        raise SqlSyntax("a window join (a JOIN of window table functions' rows on window_start and window_end) is not "
                        "supported", pos(b, joins[0]), "aggregate each side per window in a view, then join the views "
                        "with a time bound", "E011")
    where = q.args.get("where")
    if where is not None:
        rel = qc._where(where.this, rel, scope, base)
    if rel.cols is None:
        raise SqlSyntax("a window table function over a relation whose columns are unknown here", pos(b, tvf),
                        code="E011")
    taken = {c.lower() for c in rel.cols}
    clash = taken & {"window_start", "window_end", "window_time"}
    if clash:
        raise SqlSyntax(f"the table read by {tvf.name.upper()} has a column '{sorted(clash)[0]}': the window table "
                        "function adds it", pos(b, tvf), "rename the column in a view", "E104")
    spec, fn, args, _ = frame(qc, rel, scope, [], tvf)
    row, rows = _free("_row", taken), _free("_rows", taken)
    struct = "struct(" + ", ".join(quote_name(c) for c in rel.cols) + ")"
    did = b.new_id(f"{base}_rows")
    b.add_transform({"id": did, "type": "derive", "inputs": [rel.id], "columns": {row: struct}}, pos(b, tvf))
    wid = b.new_id(f"{base}_window")
    spec.update({"id": wid, "inputs": [did]})
    group = [k.name for k in keys if k.name.lower() in taken]
    if group:
        spec["group_by"] = group
    spec["aggregates"] = [{"fn": "collect_list", "field": row, "as": rows}]
    if rel.wm and "time" not in spec and "event_time" not in spec:
        spec["event_time"] = rel.wm
    i = b.add_transform(spec, pos(b, tvf))
    for key, arg in zip(WINDOW_ARGS[fn] + ("offset",), args, strict=False):
        b.smap.put(("transforms", i, key), pos(b, arg))
    sid = b.new_id(f"{base}_window_rows")
    fields = [f"inline({rows}) AS ({', '.join(quote_name(c) for c in rel.cols)})", "window_start", "window_end",
              "window_end - INTERVAL 1 MILLISECOND AS window_time"]
    b.add_transform({"id": sid, "type": "select", "inputs": [wid], "fields": fields}, pos(b, tvf))
    out = Rel(sid, [*rel.cols, "window_start", "window_end", "window_time"], window=("window_start", "window_end"))
    alias = src.alias or (tvf.expressions[0].name if tvf.expressions else "")
    scope.entries.clear()
    scope.add(alias or sid, out)
    items = [qc.item(e, scope) for e in q.expressions]
    return qc.project(out, items, base, None, pos(b, q))


def _free(name: str, taken: set[str]) -> str:
    k = 2
    out = name
    while out.lower() in taken:
        out, k = f"{name}{k}", k + 1
    return out
