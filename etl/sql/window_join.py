"""Flink's window join: the rows of two TUMBLE window table functions joined on their keys and on window_start and
window_end (INNER, LEFT, RIGHT, FULL):

    SELECT ... FROM (SELECT * FROM TABLE(TUMBLE(TABLE L, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) L
    FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE R, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) R
    ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end

Each side is a `derive` giving its rows their tumbling window (window_start, window_end, window_time =
window_end - 1 ms, Flink's, from the event time and the window's offset); the join is etl's stream join on the
keys and the window columns within the window's size (two rows of one tumbling window are less than its size
apart), so a pair joins exactly when Flink's does, and an outer join's padded row goes out once the watermark
has passed the window. HOP / CUMULATE windows (a row in several windows) and SEMI / ANTI joins are E011.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from etl.sql.query import Rel, Scope, _is_star, pos, tvf_of_table
from etl.sql.script import SqlSyntax

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")


def window_side(qc: Any, src: exp.Expression, scope: Scope | None, base: str) -> Rel | None:
    """The rows of a window TVF as a join side (`(SELECT * FROM TABLE(TUMBLE(...))) AS L` or `TABLE(TUMBLE(...))
    AS L`) with their window columns, added to `scope` (when given) under its alias; None when `src` reads no
    window TVF."""
    from etl.spec.base import Duration
    from etl.sql.window import frame
    from etl.sql.window_rows import tvf_of

    b = qc.b
    q = src.this if isinstance(src, exp.Subquery) else None
    table = tvf_of(q) if q is not None else src if tvf_of_table(src) else None
    if table is None:
        return None
    if q is not None and (len(q.expressions) != 1 or not _is_star(q.expressions[0]) or q.args.get("where")
                          or q.args.get("joins")):
        raise SqlSyntax("a window join side is the window table function's rows as they are", pos(b, q),
                        "SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' MINUTES)); filter or "
                        "project the table in a view first", "E011")
    inner = table.this.expressions[0]
    if inner.name.upper() != "TUMBLE":
        raise SqlSyntax(f"a window join of {inner.name.upper()} windows is not supported (a row is in several of "
                        "them)", pos(b, inner), "join TUMBLE windows, or the tables with a time bound", "E011")
    own = Scope()
    rel, tvf = qc._from(table, own, base)
    spec, _, _, time_col = frame(qc, rel, own, [], tvf)
    if spec.get("time") == "processing" or rel.cols is None or rel.event_time is None:
        raise SqlSyntax("a window join needs event-time windows over a table whose columns are known",
                        pos(b, inner), "window a table's WATERMARK column", "E011")
    clash = {c.lower() for c in rel.cols} & set(WINDOW_COLUMNS)
    if clash:
        raise SqlSyntax(f"the table has a column '{sorted(clash)[0]}': the window table function adds it",
                        pos(b, inner), "rename the column in a view", "E104")
    size = Duration.parse(spec["size"]).seconds
    offset = Duration.parse(spec.get("offset", "0s")).seconds
    us, off = round(size * 1e6), round(offset * 1e6)
    t = f"unix_micros(`{time_col.name}`)"
    start = f"{t} - pmod({t} - {off}, {us})" if off else f"{t} - pmod({t}, {us})"
    did = b.new_id(f"{base}_windowed")
    b.add_transform({"id": did, "type": "derive", "inputs": [rel.id], "columns": {
        "window_start": f"timestamp_micros({start})", "window_end": f"timestamp_micros({start} + {us})",
        "window_time": f"timestamp_micros({start} + {us - 1000})"}}, pos(b, tvf))
    out = Rel(did, [*rel.cols, *WINDOW_COLUMNS], rel.event_time, wm=rel.wm, window=WINDOW_COLUMNS[:2])
    if scope is not None:
        scope.add(window_alias(src) or did, out)
    b.joins.sizes[did] = size
    return out


def window_alias(src: exp.Expression) -> str:
    """A window join side's alias: `(...) AS L`, else the table the TVF reads."""
    if src.alias:
        return src.alias
    table = src if tvf_of_table(src) else None
    if table is None and isinstance(src, exp.Subquery):
        from etl.sql.window_rows import tvf_of

        table = tvf_of(src.this)
    if table is None:
        return ""
    inner = table.this.expressions[0] if table.this.expressions else None
    return table.alias or (inner.expressions[0].name if inner is not None and inner.expressions else "")


def window_bound(b: Any, keys: list[str], sizes: tuple, on: exp.Expression, has_bound: bool) -> float | None:
    """The time bound of a window join (its window's size), None when neither side is a window TVF's rows."""
    if sizes == (None, None):
        return None
    if None in sizes or sizes[0] != sizes[1]:
        raise SqlSyntax("a window join joins two window table functions' rows of one window size", pos(b, on),
                        "TUMBLE both sides with the same size", "E011")
    if not {"window_start", "window_end"} <= {k.lower() for k in keys} or has_bound:
        raise SqlSyntax("a window join's ON is the keys and L.window_start = R.window_start AND L.window_end = "
                        "R.window_end", pos(b, on), "AND L.window_start = R.window_start AND L.window_end = "
                        "R.window_end", "E011")
    return float(sizes[0])
