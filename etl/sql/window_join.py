"""Flink's window join: the rows of two window table functions (TUMBLE, HOP, CUMULATE) joined on their keys and on
window_start and window_end (INNER, LEFT, RIGHT, FULL, SEMI, ANTI):

    SELECT ... FROM (SELECT * FROM TABLE(TUMBLE(TABLE L, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) L
    FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE R, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) R
    ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end

Each side is a `derive` giving its rows their tumbling window (window_start, window_end, window_time =
window_end - 1 ms, Flink's, from the event time and the window's offset); the join is etl's stream join on the
keys and the window columns within the window's size (two rows of one tumbling window are less than its size
apart), so a pair joins exactly when Flink's does, and an outer join's padded row goes out once the watermark
has passed the window. Flink's SEMI / ANTI window joins, `WHERE L.k [NOT] IN (SELECT k FROM (TVF of R) R WHERE
L.window_start = R.window_start AND L.window_end = R.window_end)` and `[NOT] EXISTS (...)`, are a `join` with `how:
semi` / `anti` (semi_anti). A HOP or CUMULATE side has a row per window its row is in (a `derive` of the windows'
bounds, a `select` with INLINE); two rows of one window are less than its size apart there too. The two sides'
windows must be alike (Flink's limitation): E011 otherwise.
"""

from __future__ import annotations

from typing import Any, cast

from sqlglot import exp

from etl.spec.base import Duration
from etl.sql.intervals import duration_text
from etl.sql.relation import Rel, Scope, is_star, pos, sql_text, tvf_of_table
from etl.sql.script import SqlSyntax
from etl.sql.where import conjuncts
from etl.sql.window import frame
from etl.sql.window_rows import tvf_of

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")


def window_side(qc: Any, src: exp.Expression, scope: Scope | None, base: str) -> Rel | None:
    """The rows of a window TVF as a join side (`(SELECT * FROM TABLE(TUMBLE(...))) AS L` or `TABLE(TUMBLE(...))
    AS L`) with their window columns, added to `scope` (when given) under its alias; None when `src` reads no
    window TVF."""
    b = qc.b
    q = src.this if isinstance(src, exp.Subquery) else None
    table = tvf_of(q) if q is not None else src if tvf_of_table(src) else None
    if table is None:
        return None
    if q is not None and (len(q.expressions) != 1 or not is_star(q.expressions[0]) or q.args.get("where")
                          or q.args.get("joins")):
        raise SqlSyntax("a window join side is the window table function's rows as they are", pos(b, q),
                        "SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' MINUTES)); filter or "
                        "project the table in a view first", "E011")
    inner = table.this.expressions[0]
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

    def floor(every: int) -> str:  # the latest window start (or step end - step) at or before t
        return f"{t} - pmod({t} - {off}, {every})" if off else f"{t} - pmod({t}, {every})"

    did = b.new_id(f"{base}_windowed")
    if spec["kind"] == "tumbling":
        start = floor(us)
        b.add_transform({"id": did, "type": "derive", "inputs": [rel.id], "columns": {
            "window_start": f"timestamp_micros({start})", "window_end": f"timestamp_micros({start} + {us})",
            "window_time": f"timestamp_micros({start} + {us - 1000})"}}, pos(b, tvf))
        out = Rel(did, [*rel.cols, *WINDOW_COLUMNS], rel.event_time, wm=rel.wm, window=WINDOW_COLUMNS[:2])
    else:
        out = _windows_of_a_row(b, spec, rel, t, floor, us, did, base, tvf)
    if scope is not None:
        scope.add(window_alias(src) or out.id, out)
    b.joins.sizes[out.id] = size
    b.joins.windows[out.id] = tuple(sorted((k, str(v)) for k, v in spec.items() if k not in ("id", "inputs")))
    return out


def _windows_of_a_row(b: Any, spec: dict, rel: Rel, t: str, floor: Any, us: int, did: str, base: str,
                      tvf: Any) -> Rel:
    """A HOP or CUMULATE side: a row in each of its windows (Flink's assigners, as etl's windows_of): HOP, the
    starts offset + k * slide in (t - size, t]; CUMULATE, the start offset + k * size at or before t and the ends
    every step after t up to start + size. A `derive` computes them as an array, a `select` writes a row per window."""
    every = round(Duration.parse(spec.get("slide") or spec["step"]).seconds * 1e6)
    if spec["kind"] == "sliding":
        n = -(-us // every)  # enough starts back to cover the size; those at or before t - size are dropped
        starts = f"filter(sequence({floor(every)} - {n * every}, {floor(every)}, {every}), s -> s > {t} - {us})"
        bounds = f"transform({starts}, s -> named_struct('s', s, 'e', s + {us}))"
    else:
        first = f"{floor(every)} + {every}"
        bounds = f"transform(sequence({first}, {floor(us)} + {us}, {every}), e -> named_struct('s', {floor(us)}, 'e', e))"
    rows = "window_bounds"
    while rows in {c.lower() for c in rel.cols or ()}:
        rows += "_"
    b.add_transform({"id": did, "type": "derive", "inputs": [rel.id], "columns": {rows: (
        f"transform({bounds}, w -> named_struct('window_start', timestamp_micros(w.s), 'window_end', "
        "timestamp_micros(w.e), 'window_time', timestamp_micros(w.e - 1000)))")}}, pos(b, tvf))
    sid = b.new_id(f"{base}_windows")
    cols = [*(rel.cols or ()), *WINDOW_COLUMNS]
    b.add_transform({"id": sid, "type": "select", "inputs": [did], "fields": [
        *(rel.cols or ()), f"INLINE({rows}) AS ({', '.join(WINDOW_COLUMNS)})"]}, pos(b, tvf))
    return Rel(sid, cols, rel.event_time, wm=rel.wm, window=WINDOW_COLUMNS[:2])


def window_alias(src: exp.Expression) -> str:
    """A window join side's alias: `(...) AS L`, else the table the TVF reads."""
    if src.alias:
        return src.alias
    table = src if tvf_of_table(src) else None
    if table is None and isinstance(src, exp.Subquery):
        table = tvf_of(src.this)
    if table is None:
        return ""
    inner = table.this.expressions[0] if table.this.expressions else None
    return table.alias or (inner.expressions[0].name if inner is not None and inner.expressions else "")


def window_bound(b: Any, keys: list[str], ids: tuple[str, str], on: exp.Expression, has_bound: bool) -> float | None:
    """The time bound of a window join (its window's size: two rows of one window are less than it apart), None when
    neither side is a window TVF's rows."""
    sizes = tuple(b.joins.sizes.get(i) for i in ids)
    if sizes == (None, None):
        return None
    if None in sizes or sizes[0] != sizes[1]:
        raise SqlSyntax("a window join joins two window table functions' rows of one window size", pos(b, on),
                        "TUMBLE both sides with the same size", "E011")
    if len({b.joins.windows.get(i) for i in ids}) != 1:  # Flink: the windowing TVFs of both sides are the same
        raise SqlSyntax("a window join joins the rows of two window table functions of one kind, size, slide or "
                        "step and offset", pos(b, on), "window both sides alike", "E011")
    if not {"window_start", "window_end"} <= {k.lower() for k in keys} or has_bound:
        raise SqlSyntax("a window join's ON is the keys and L.window_start = R.window_start AND L.window_end = "
                        "R.window_end", pos(b, on), "AND L.window_start = R.window_start AND L.window_end = "
                        "R.window_end", "E011")
    return float(sizes[0])


def semi_anti_conjunct(where: exp.Expression | None) -> exp.Expression | None:
    """The conjunct of `where` that may be a window semi / anti join: [NOT] IN (sub-query) or [NOT] EXISTS."""
    for c in conjuncts(where) if where is not None else []:
        p = c.this if isinstance(c, exp.Not) else c
        if isinstance(p, exp.Exists) or isinstance(p, exp.In) and p.args.get("query") is not None:
            return c
    return None


# C901: one branch per Flink window-join rule, each with its error position
def semi_anti(qc: Any, c: exp.Expression, left: Rel, scope: Scope, where: exp.Expression | None,  # noqa: C901
              base: str) -> tuple[Rel, exp.Expression | None]:
    """Flink's window SEMI / ANTI join: `WHERE L.k [NOT] IN (SELECT k FROM (window TVF of R) R WHERE L.window_start =
    R.window_start AND L.window_end = R.window_end)` or `[NOT] EXISTS (SELECT * FROM ... WHERE L.k = R.k AND ...)`
    -> a `join` with `how: semi` (each left row with a row of R in its window passing the correlation, once) or
    `anti` (each without one, once the watermark has passed its window). A correlation equality of one column name
    is a key, the other conditions the join's `condition`; NOT IN is SQL's (Flink's) null-aware one: a left row is
    dropped when a row of R in its window has an equal key, or either key is NULL. Returns the join's rows and the
    rest of `where`."""
    b = qc.b
    neg = isinstance(c, exp.Not)
    pred = c.this if neg else c
    sub = pred.args["query"].this if isinstance(pred, exp.In) else pred.this
    frm = (sub.args.get("from_") or sub.args.get("from")) if isinstance(sub, exp.Select) else None
    right = window_side(qc, frm.this, None, base) if frm is not None and not sub.args.get("joins") else None
    if frm is None or right is None or sub.args.get("group") or sub.args.get("having"):
        raise SqlSyntax("a window semi / anti join's sub-query reads a window table function's rows",
                        pos(b, frm.this if frm is not None else pred),
                        "(SELECT k FROM (SELECT * FROM TABLE(TUMBLE(TABLE R, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) "
                        "R WHERE L.window_start = R.window_start AND L.window_end = R.window_end)", "E011")
    ralias = (window_alias(frm.this) or right.id).lower()
    lefts = set(scope.entries)
    taken = {n.lower() for n in left.cols or ()}
    rename = {n: (f"{right.id}_{n}" if n.lower() in taken else n) for n in right.cols or ()}

    def side(col: exp.Column) -> str:
        t = (col.table or "").lower()
        if t == ralias:
            return "right"
        if t in lefts:
            return "left"
        raise SqlSyntax(f"qualify column '{col.name}' with L or R in a window semi / anti join", pos(b, col),
                        code="E010")

    def text(e: exp.Expression) -> str:
        e = e.copy()
        for col in list(e.find_all(exp.Column)):
            col.replace(exp.column(rename.get(col.name, col.name) if side(col) == "right" else col.name))
        return sql_text(e, paren=True)

    keys: list[str] = []
    windows: set[str] = set()
    conds: list[str] = []
    for x in conjuncts(sub.args["where"].this) if sub.args.get("where") is not None else []:
        if isinstance(x, exp.EQ) and isinstance(x.this, exp.Column) and isinstance(x.expression, exp.Column) \
                and {side(x.this), side(x.expression)} == {"left", "right"} \
                and x.this.name.lower() == x.expression.name.lower():
            name = x.this.name.lower()
            (windows.add(name) if name in WINDOW_COLUMNS[:2] else keys.append(x.this.name))
            continue
        conds.append(text(x))
    if windows != set(WINDOW_COLUMNS[:2]):
        raise SqlSyntax("a window semi / anti join's sub-query WHERE has L.window_start = R.window_start AND "
                        "L.window_end = R.window_end", pos(b, sub.args.get("where") or sub), "add them to the sub-query's WHERE", "E011")
    if isinstance(pred, exp.In):
        (rcol,) = sub.expressions if len(sub.expressions) == 1 else (None,)
        if not isinstance(rcol, exp.Column) or not isinstance(pred.this, exp.Column):
            raise SqlSyntax("a window semi / anti join's IN compares a column of L with one column of R",
                            pos(b, pred), "L.k IN (SELECT k FROM ...)", "E011")
        lname, rname = pred.this.name, rename.get(rcol.name, rcol.name)
        if neg:  # SQL's NOT IN: an equal key or a NULL one on either side excludes the row
            conds.append(f"({lname} = {rname} OR {lname} IS NULL OR {rname} IS NULL)")
        elif lname.lower() == rcol.name.lower():
            keys.append(lname)
        else:
            conds.append(f"({lname} = {rname})")
    sizes = (b.joins.sizes.get(left.id), b.joins.sizes.get(right.id))
    if b.joins.windows.get(left.id) != b.joins.windows.get(right.id):
        raise SqlSyntax("a window semi / anti join joins the rows of two window table functions of one kind, size, "
                        "slide or step and offset", pos(b, pred), "window both sides alike", "E011")
    jid = b.new_id(f"{base}_{'anti' if neg else 'semi'}")
    spec: dict[str, Any] = {"id": jid, "type": "join", "inputs": [left.id, right.id],
                            "on": [*keys, *WINDOW_COLUMNS[:2]], "how": "anti" if neg else "semi",
                            "within": duration_text(float(sizes[0] or 0))}
    for key, rel in (("left_time", left), ("right_time", right)):
        if rel.wm:
            spec[key] = rel.wm
    if conds:
        spec["condition"] = " AND ".join(conds)
    b.add_transform(spec, pos(b, c))
    rest = [x for x in conjuncts(where) if x is not c] if where is not None else []
    return Rel(jid, left.cols, left.event_time, wm=left.wm, window=left.window), \
        (cast(exp.Expression, exp.and_(*rest, copy=False)) if rest else None)
