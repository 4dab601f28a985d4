"""GROUP BY with a window -> a `window` transform (and a select when the SELECT list reshapes it).

`GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), k` (also HOP(ts, slide, size),
SESSION(ts, gap)) with TUMBLE_START / TUMBLE_END (HOP_*, SESSION_*) in the
SELECT list, or Flink's `FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL ...))`
with `GROUP BY window_start, window_end, k`. Aggregates: COUNT(*), COUNT(x),
COUNT(DISTINCT x) (exactly: size of a collect_set), SUM, AVG, MIN, MAX, APPROX_COUNT_DISTINCT, COLLECT_LIST,
COLLECT_SET, FIRST, LAST over a column or an expression (computed by a `derive` first, as
GROUP BY keys that are expressions: etl.sql.aggregate.derive_inputs). HAVING becomes the window's `having`. EMIT
becomes its `emit` (emit_spec). A GROUP BY without a window is etl.sql.aggregate's.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from etl.sql.aggcalls import WINDOW_KINDS, is_aggregate, replace_aggregates
from etl.sql.aggregate import compile_aggregate, derive_inputs, no_updates
from etl.sql.division import aggregate_types
from etl.sql.grouping import compile_grouping_sets, grouping_sets
from etl.sql.intervals import duration_text, flink_duration, seconds, signed_seconds
from etl.sql.relation import Rel, pos
from etl.sql.script import SqlSyntax

WINDOW_ARGS = {"TUMBLE": ("size",), "HOP": ("slide", "size"), "CUMULATE": ("step", "size"), "SESSION": ("gap",)}
def emit_spec(b: Any, emit: dict) -> dict:
    """The window's `emit` for an EMIT clause: BEFORE WATERMARK -> `early`; AFTER WATERMARK -> `late: update`
    with `every` the delay (none: an update row per micro-batch) and `allowed_lateness` from
    `SET 'table.exec.emit.allow-lateness'` (Flink's option; there is no default, a window would never close)."""
    out: dict[str, Any] = {}
    if emit.get("early"):
        out["early"] = emit["early"]
    if "late_span" in emit:
        setting = b.settings.get("allow-lateness")
        if setting is None:
            raise SqlSyntax("EMIT ... AFTER WATERMARK needs the allowed lateness: how long a closed window is "
                            "still updated by late events", emit["late_span"],
                            "add SET 'table.exec.emit.allow-lateness' = '10 min';", "E101")
        value, o = setting
        secs = flink_duration(value)
        if not secs:
            raise SqlSyntax(f"invalid allowed lateness '{value}'", o.value_span,
                            "a positive duration such as '10 min', '30 s', '1 h'", "E102")
        out.update({"late": "update", "allowed_lateness": duration_text(secs)})
        if emit["late"]:
            out["every"] = emit["late"]
    return out


def _window_call(b: Any, group: list, tvf: Any) -> tuple[exp.Expression, str, list]:
    if tvf is not None:
        args = tvf.expressions[1:]
        desc = args[0] if args else None
        if not (isinstance(desc, exp.Anonymous) and desc.name.upper() == "DESCRIPTOR" and desc.expressions):
            raise SqlSyntax("expected DESCRIPTOR(time column) after the table", pos(b, tvf))
        return desc.expressions[0], tvf.name.upper(), args[1:]
    calls = [g for g in group if isinstance(g, exp.Anonymous) and g.name.upper() in WINDOW_KINDS]
    if not calls:
        raise SqlSyntax("GROUP BY without a window (TUMBLE, HOP, SESSION) is not supported yet",
                        pos(b, group[0]) if group else b.stmt_span,
                        "group by TUMBLE(ts, INTERVAL '1' MINUTE) and the keys", "E011")
    call = calls[0]
    if call.name.upper() == "CUMULATE":
        raise SqlSyntax("CUMULATE is a window table function only", pos(b, call),
                        "FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), step, size)) ... GROUP BY window_start, "
                        "window_end", "E011")
    if not call.expressions:
        raise SqlSyntax(f"{call.name} needs a time column and an interval", pos(b, call))
    return call.expressions[0], call.name.upper(), call.expressions[1:]


def _group_keys(b: Any, group: list, tvf: Any) -> list[str]:
    """The GROUP BY keys of a window besides the window itself (its call, or a TVF's window_start / window_end)."""
    keys: list[str] = []
    for g in group:
        if g is None or (isinstance(g, exp.Anonymous) and g.name.upper() in WINDOW_KINDS):
            continue
        if isinstance(g, exp.Column) and g.name.lower() in ("window_start", "window_end") and tvf is not None:
            continue
        if not isinstance(g, exp.Column):
            raise SqlSyntax("a GROUP BY key reads the window's start or end: they exist only after the window",
                            pos(b, g), code="E011")
        keys.append(g.name)
    return keys


def compile_window(qc: Any, q: exp.Select, rel: Rel, scope: Any, base: str, out_names: list[str] | None,
                   tvf: Any, emit: dict | None) -> Rel:
    b = qc.b
    sets = grouping_sets(q.args.get("group"))
    if sets is not None:
        return compile_grouping_sets(qc, q, rel, scope, base, out_names, tvf, emit, sets, compile_window)
    group = [qc.resolve(g, scope) for g in (q.args["group"].expressions if q.args.get("group") else [])]
    if tvf is None and not any(isinstance(g, exp.Anonymous) and g.name.upper() in WINDOW_KINDS for g in group):
        return compile_aggregate(qc, q, rel, scope, base, out_names, emit)
    no_updates(b, rel, q.args.get("group") or tvf or q, "a window")
    if tvf is not None and not group and not any(is_aggregate(b, n) for e in q.expressions for n in e.walk()):
        raise SqlSyntax(f"the rows of a window table function ({tvf.name.upper()}) alone are not a query in "
                        "Flink: aggregate them (GROUP BY window_start, window_end), rank them (window Top-N) or "
                        "deduplicate them (window deduplication)", pos(b, tvf),
                        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY "
                        "price DESC) AS rownum FROM TABLE(...)) WHERE rownum <= 3", "E011")
    spec, fn, args, time_col = frame(qc, rel, scope, group, tvf)
    rel, items, cond = derive_inputs(qc, q, rel, scope, base, group)
    spec["inputs"] = [rel.id]
    keys = _group_keys(b, group, tvf)
    if keys:
        spec["group_by"] = keys
    if tvf is None:
        _same_window(b, [body for _, body in items] + [cond], fn, time_col, args)
    aggs: list[dict] = []
    items = [(alias, replace_aggregates(b, body, aggs, alias, top=True)) for alias, body in items]
    items = [(alias or (body.name if isinstance(body, exp.Column) else None), body) for alias, body in items]
    having = q.args.get("having")
    if cond is not None:
        spec["having"] = replace_aggregates(b, cond, aggs, None, top=False).sql(dialect="spark")
    if not aggs:
        raise SqlSyntax("a windowed GROUP BY needs at least one aggregate (COUNT(*), SUM(x), ...)", pos(b, q),
                        code="E104")
    spec["aggregates"] = aggs
    if emit:
        spec["emit"] = emit_spec(b, emit)
    if rel.wm and "time" not in spec and "event_time" not in spec:
        spec["event_time"] = rel.wm
    wid = b.new_id(f"{base}_window")
    spec["id"] = wid
    i = b.add_transform(spec, pos(b, q.args.get("group") or tvf or q))
    if having is not None:
        b.note_expr(("transforms", i, "having"), [having])
    if emit:
        b.smap.put(("transforms", i, "emit"), emit["span"])
    for key, arg in zip(WINDOW_ARGS[fn] + ("offset",), args, strict=False):
        b.smap.put(("transforms", i, key), pos(b, arg))  # a duration's error points at its INTERVAL
    cols = keys + ["window_start", "window_end"] + [a["as"] for a in aggs]
    flags: tuple[str, ...] = ()
    if emit:  # rows that replace earlier ones of their window: flagged (etl.spec.transforms.Emit.flag_columns)
        flags = ("_final", "_retract", "_update") if spec["emit"].get("late") == "update" else ("_final", "_retract")
    rel = Rel(wid, cols, window=("window_start", "window_end"), flags=flags)
    b.set_types(wid, {**aggregate_types(keys, aggs, b.scope_types(scope)), "window_start": "timestamp",
                      "window_end": "timestamp"})
    return qc.project(rel, items, base, out_names, pos(b, q))


def frame(qc: Any, rel: Rel, scope: Any, group: list, tvf: Any) -> tuple[dict, str, list, exp.Expression]:
    """(the window spec: kind, size ..., time; the window function's name, its intervals, its time column)."""
    b = qc.b
    time_col, fn, args = _window_call(b, group, tvf)
    time_col = qc.resolve(time_col, scope)
    spec: dict[str, Any] = {"id": None, "type": "window", "inputs": [rel.id], "kind": WINDOW_KINDS.get(fn, fn.lower())}
    shape(b, spec, fn, args, tvf, time_col)
    if not isinstance(time_col, exp.Column):
        raise SqlSyntax("the window's time is a column", pos(b, time_col))
    if rel.proctime is not None and time_col.name == rel.proctime:
        spec["time"] = "processing"
    elif rel.event_time is not None and time_col.name != rel.event_time:
        raise SqlSyntax(f"window time column '{time_col.name}' is not the watermarked column '{rel.event_time}'",
                        pos(b, time_col), f"declare WATERMARK FOR {time_col.name} in its table", "E320")
    elif rel.event_time is None and _rsqldb_time(b, scope, time_col.name):
        # rsqldb windows on a time column without WATERMARK (its documented event-time example): no lateness
        spec["event_time"] = {"field": time_col.name, "watermark": "0s"}
    elif rel.event_time is None:  # Flink: a window needs a time attribute (a watermarked or PROCTIME() column)
        c = time_col.name
        raise SqlSyntax(f"window time column '{c}' has no watermark", pos(b, time_col),
                        f"declare `WATERMARK FOR {c} AS {c} - INTERVAL '5' SECOND` in its CREATE TABLE, "
                        "or window on a PROCTIME() column", "E320")
    return spec, fn, args, time_col


def shape(b: Any, spec: dict, fn: str, args: list, tvf: Any, time_col: exp.Expression) -> None:
    """The window's size / slide / step / gap and offset from a TUMBLE / HOP / CUMULATE / SESSION call's intervals.
    A window table function takes an offset last (Flink: window starts shifted by it, negative too; only its
    remainder by the size, HOP's slide, matters, so etl keeps that)."""
    need = WINDOW_ARGS[fn]
    if not (len(args) == len(need) or (tvf is not None and fn != "SESSION" and len(args) == len(need) + 1)):
        more = " [, offset]" if tvf is not None and fn != "SESSION" else ""
        raise SqlSyntax(f"{fn} takes the time column, then {', '.join(need)}{more}",
                        pos(b, args[-1] if args else time_col), code="E010")
    for key, arg in zip(need, args, strict=False):
        spec[key] = duration_text(seconds(b, arg))
    if len(args) > len(need):
        every = seconds(b, args[1] if fn == "CUMULATE" else args[0])
        offset = signed_seconds(b, args[-1]) % every if every else 0.0
        if offset:
            spec["offset"] = duration_text(offset)


def _rsqldb_time(b: Any, scope: Any, name: str) -> bool:
    """Under SET 'sql.dialect' = 'rsqldb': is `name` a TIMESTAMP or BIGINT column declared by the table read?"""
    tables = [r.table for r, _ in scope.entries.values() if r.table is not None]
    return b.functions.dialect == "rsqldb" and len(tables) == 1 and \
        tables[0].schema().get(name) in ("timestamp", "bigint")


def _same_window(b: Any, nodes: list, fn: str, time_col: exp.Expression, args: list) -> None:
    """Flink: TUMBLE_START(ts, INTERVAL '1' MINUTE) names the GROUP BY's window, with the same arguments."""
    want: list[Any] = [time_col.name] + [seconds(b, a) for a in args]
    for node in nodes:
        for n in node.find_all(exp.Anonymous) if node is not None else ():
            name = n.name.upper()
            if name.split("_")[0] in WINDOW_KINDS and name.endswith(("_START", "_END", "_ROWTIME")):
                got: list[Any] = [n.expressions[0].name if n.expressions and isinstance(n.expressions[0], exp.Column) else None]
                got += [seconds(b, a) for a in n.expressions[1:]]
                if name.split("_")[0] != fn or got != want:
                    call = f"{fn}({', '.join([time_col.name] + [a.sql(dialect='spark') for a in args])})"
                    raise SqlSyntax(f"{n.name} does not name the GROUP BY's window {call}", pos(b, n),
                                    f"write {fn}_{name.split('_', 1)[1]} with the arguments of the GROUP BY's {fn}",
                                    "E104")
