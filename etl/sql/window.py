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

import re
from typing import Any

from sqlglot import exp

from etl.sql.division import aggregate_types
from etl.sql.query import Rel, pos
from etl.sql.script import SqlSyntax

_ARGS = {"TUMBLE": ("size",), "HOP": ("slide", "size"), "CUMULATE": ("step", "size"), "SESSION": ("gap",)}
_UNIT = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}
_KIND = {"TUMBLE": "tumbling", "HOP": "sliding", "CUMULATE": "cumulating", "SESSION": "session"}
_AGG = {"Sum": "sum", "Avg": "avg", "Min": "min", "Max": "max", "ApproxDistinct": "approx_count_distinct",
        "ArrayAgg": "collect_list", "ArrayUniqueAgg": "collect_set", "First": "first", "Last": "last",
        "FirstValue": "first", "LastValue": "last"}


def seconds(b: Any, node: exp.Expression) -> float:
    if isinstance(node, exp.Interval):
        value: Any = node.this.this if isinstance(node.this, exp.Literal) else None
        unit_arg = node.args.get("unit")
        unit = (unit_arg.name if unit_arg is not None else "").upper()
        if value is not None and " " in str(value).strip() and not unit:
            value, unit = str(value).split()[0], str(value).split()[1].upper()
        unit = unit[:-1] if unit.endswith("S") and unit[:-1] in _UNIT else unit
        if unit in _UNIT and value is not None:
            if not re.fullmatch(r"\d+(\.\d+)?", str(value).strip()):  # float() takes 'nan', 'inf', '1e9', '1_0'
                raise SqlSyntax(f"interval value '{value}' is not a number of {unit.lower()}s", pos(b, node),
                                "write digits, e.g. INTERVAL '5' SECOND (Flink's interval literal)", "E011")
            return float(value) * _UNIT[unit]
    raise SqlSyntax("expected an interval such as INTERVAL '1' MINUTE", pos(b, node), code="E102")


def _dur(secs: float) -> str:
    from etl.spec.base import Duration

    return str(Duration(secs))


_FLINK_UNITS = {"ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60,
                "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def flink_duration(text: str) -> float | None:
    """Seconds of a Flink duration option ('10 min', '30 s', '1 h', '500 ms'; a bare number is milliseconds)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if m is None:
        return None
    unit = m.group(2).lower()
    unit = unit if unit in _FLINK_UNITS or not unit.endswith("s") else unit[:-1]
    if not unit:
        return float(m.group(1)) / 1000
    return float(m.group(1)) * _FLINK_UNITS[unit] if unit in _FLINK_UNITS else None


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
        out.update({"late": "update", "allowed_lateness": _dur(secs)})
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
    calls = [g for g in group if isinstance(g, exp.Anonymous) and g.name.upper() in _KIND]
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
        if g is None or (isinstance(g, exp.Anonymous) and g.name.upper() in _KIND):
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
    from etl.sql.grouping import compile_grouping_sets, grouping_sets

    sets = grouping_sets(q.args.get("group"))
    if sets is not None:
        return compile_grouping_sets(qc, q, rel, scope, base, out_names, tvf, emit, sets)
    group = [qc.resolve(g, scope) for g in (q.args["group"].expressions if q.args.get("group") else [])]
    if tvf is None and not any(isinstance(g, exp.Anonymous) and g.name.upper() in _KIND for g in group):
        from etl.sql.aggregate import compile_aggregate

        return compile_aggregate(qc, q, rel, scope, base, out_names, emit)
    from etl.sql.aggregate import derive_inputs, no_updates

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
    items = [(alias, _replace(b, body, aggs, alias, top=True)) for alias, body in items]
    items = [(alias or (body.name if isinstance(body, exp.Column) else None), body) for alias, body in items]
    having = q.args.get("having")
    if cond is not None:
        spec["having"] = _replace(b, cond, aggs, None, top=False).sql(dialect="spark")
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
    for key, arg in zip(_ARGS[fn] + ("offset",), args, strict=False):
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
    spec: dict[str, Any] = {"id": None, "type": "window", "inputs": [rel.id], "kind": _KIND.get(fn, fn.lower())}
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
    need = _ARGS[fn]
    if not (len(args) == len(need) or (tvf is not None and fn != "SESSION" and len(args) == len(need) + 1)):
        more = " [, offset]" if tvf is not None and fn != "SESSION" else ""
        raise SqlSyntax(f"{fn} takes the time column, then {', '.join(need)}{more}",
                        pos(b, args[-1] if args else time_col), code="E010")
    for key, arg in zip(need, args, strict=False):
        spec[key] = _dur(seconds(b, arg))
    if len(args) > len(need):
        every = seconds(b, args[1] if fn == "CUMULATE" else args[0])
        offset = _signed_seconds(b, args[-1]) % every if every else 0.0
        if offset:
            spec["offset"] = _dur(offset)


def _signed_seconds(b: Any, node: exp.Expression) -> float:
    """An offset's seconds: `INTERVAL '-1' MINUTE` and `-INTERVAL '1' MINUTE` are negative."""
    if isinstance(node, exp.Neg):
        return -_signed_seconds(b, node.this)
    if isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal) and str(node.this.this).startswith("-"):
        copy = node.copy()
        copy.this.set("this", str(node.this.this)[1:])
        return -seconds(b, copy)
    return seconds(b, node)


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
            if name.split("_")[0] in _KIND and name.endswith(("_START", "_END", "_ROWTIME")):
                got: list[Any] = [n.expressions[0].name if n.expressions and isinstance(n.expressions[0], exp.Column) else None]
                got += [seconds(b, a) for a in n.expressions[1:]]
                if name.split("_")[0] != fn or got != want:
                    call = f"{fn}({', '.join([time_col.name] + [a.sql(dialect='spark') for a in args])})"
                    raise SqlSyntax(f"{n.name} does not name the GROUP BY's window {call}", pos(b, n),
                                    f"write {fn}_{name.split('_', 1)[1]} with the arguments of the GROUP BY's {fn}",
                                    "E104")


def _replace(b: Any, node: exp.Expression, aggs: list[dict], alias: str | None, top: bool) -> exp.Expression:
    """Aggregates -> columns named by their `as`; window start/end functions -> window_start/window_end."""
    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Anonymous):
            name = n.name.upper()
            if name.endswith("_START") and name.split("_")[0] in _KIND:
                return exp.column("window_start")
            if name.endswith(("_END", "_ROWTIME")) and name.split("_")[0] in _KIND:
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
    return isinstance(n, exp.Count) or type(n).__name__ in _AGG or (
        isinstance(n, exp.Anonymous) and b.udf(n.name, "aggregate") is not None)


def window_ref(n: exp.Expression) -> bool:
    """Does this node read a window's start or end (TUMBLE_START(...), window_start of a window TVF)?"""
    if isinstance(n, exp.Anonymous):
        return "_" in n.name and n.name.upper().split("_")[0] in _KIND
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
    fn = _AGG.get(type(n).__name__)
    if fn is None:
        return None
    return {"fn": fn, "field": _col(b, n.this, n)}


def _col(b: Any, arg: Any, n: exp.Expression) -> str:
    if isinstance(arg, exp.Column):
        return arg.name
    raise SqlSyntax("an aggregate reads a column: compute the expression in a view first", pos(b, n), code="E011")
