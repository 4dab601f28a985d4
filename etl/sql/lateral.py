"""`LATERAL TABLE(f(...)) AS t(cols)` with Blink's built-in table functions -> a `select` that explodes.

    FROM src, LATERAL TABLE(STRING_SPLIT(s, ',')) AS t(v)           -- a row per part (explode)
    FROM src LEFT JOIN LATERAL TABLE(...) AS t(v) ON TRUE            -- also rows without parts (explode_outer)
    FROM src, LATERAL TABLE(GENERATE_SERIES(1, n)) AS t(i)          -- a row per number
    FROM src, LATERAL TABLE(JSON_TUPLE(s, 'a', 'b')) AS t(a, b)     -- one row, a column per key

The select keeps the input's columns and adds the function's. A Python table function of the script
(CREATE FUNCTION t AS 'module:callable', etl.compile.functions) gives, per row, the array of rows it
yields: a derive computes it (guarded: a row the function raises on is a dead letter), a select
explodes it with `inline` (`inline_outer` for LEFT JOIN ... ON TRUE) and drops the array:

    FROM src, LATERAL TABLE(t(s)) AS T(a, b)   ->  derive T_rows = t(s); select *, INLINE(T_rows) AS (a, b)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl.sql.grok import lateral as grok_lateral
from etl.sql.relation import Rel, Scope, pos
from etl.sql.script import SqlSyntax

_REGEX_SPECIAL = frozenset("\\.[]{}()*+?^$|")


def _quoted_sep(sep: exp.Expression) -> exp.Expression:
    """Spark's split() takes a regex: a literal separator is escaped (`|` -> `\\|`)."""
    if isinstance(sep, exp.Literal) and sep.is_string:
        return exp.Literal.string("".join("\\" + c if c in _REGEX_SPECIAL else c for c in sep.this))
    return sep


def lateral(b: Any, j: exp.Join, left: Rel, scope: Scope, base: str) -> Rel:
    lat = j.this
    call = lat.this
    if isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE" and call.expressions:
        call = call.expressions[0]
    alias = lat.args.get("alias")
    names = [c.name for c in (alias.columns if alias is not None else [])]
    outer = (j.side or "").upper() == "LEFT"
    on = j.args.get("on")
    if outer and not (isinstance(on, exp.Boolean) and on.this is True):
        raise SqlSyntax("LEFT JOIN LATERAL TABLE(...) needs ON TRUE", pos(b, on or j), code="E011")
    qc = b.queries
    explode = "explode_outer" if outer else "explode"
    fname = call.name.upper() if isinstance(call, exp.Anonymous) else type(call).__name__.upper()
    udtf = b.udf(call.name, "table") if isinstance(call, exp.Anonymous) else None
    if udtf is not None:
        return _python(b, lat, call, left, scope, base, names, outer, udtf)
    if fname == "GROK":
        return grok_lateral(b, lat, call, left, scope, base, names, outer)
    if fname == "STRING_SPLIT" and len(call.expressions) == 2:
        s, sep = (qc.resolve(a, scope) for a in call.expressions)
        parts = exp.Anonymous(this="split", expressions=[s, _quoted_sep(sep)])
        cols = [exp.Anonymous(this=explode, expressions=[parts])]
    elif fname == "GENERATESERIES":
        start, end = qc.resolve(call.args["start"], scope), qc.resolve(call.args["end"], scope)
        # Spark's sequence(3, 1) counts down; Blink's series from 3 to 1 is empty
        series = exp.If(this=exp.LTE(this=start, expression=end),
                        true=exp.Anonymous(this="sequence", expressions=[start.copy(), end.copy()]),
                        false=exp.Array(expressions=[]))
        cols = [exp.Anonymous(this=explode, expressions=[series])]
    elif fname == "JSON_TUPLE" and len(call.expressions) >= 2:
        s = qc.resolve(call.expressions[0], scope)
        keys = call.expressions[1:]
        if not all(isinstance(k, exp.Literal) and k.is_string for k in keys):
            raise SqlSyntax("JSON_TUPLE keys are string literals", pos(b, call), code="E011")
        cols = [exp.Anonymous(this="get_json_object", expressions=[s.copy(), exp.Literal.string(f"$.{k.this}")])
                for k in keys]
    else:
        raise SqlSyntax(f"table function '{call.sql()[:40]}' is not supported: STRING_SPLIT, GENERATE_SERIES, "
                        "JSON_TUPLE, GROK and the script's Python table functions (CREATE FUNCTION) are", pos(b, call),
                        code="E011")
    if len(names) != len(cols):
        raise SqlSyntax(f"name the table function's {len(cols)} column{'s' if len(cols) > 1 else ''}: "
                        f"AS t({', '.join(f'c{i}' for i in range(1, len(cols) + 1))})", pos(b, lat), code="E104")
    if left.cols is None:
        raise SqlSyntax("LATERAL TABLE over a relation whose columns are unknown here", pos(b, lat), code="E011")
    sid = b.new_id(f"{base}_lateral")
    fields = list(left.cols) + [f"{c.sql(dialect='spark')} AS {n}" for c, n in zip(cols, names, strict=True)]
    i = b.add_transform({"id": sid, "type": "select", "inputs": [left.id], "fields": fields}, pos(b, lat))
    for k in range(len(left.cols), len(fields)):
        b.note_expr(("transforms", i, "fields", k), [call])
    out = replace(left, id=sid, cols=list(left.cols) + names, table=None, static=False)
    scope.add(alias.name if alias is not None and alias.name else sid, out)
    return out


def _python(b: Any, lat: Any, call: exp.Anonymous, left: Rel, scope: Scope, base: str, names: list[str],
            outer: bool, sig: Any) -> Rel:
    qc = b.queries
    alias = lat.args.get("alias")
    if len(names) != len(sig.columns):
        want = ", ".join(n for n, _ in sig.columns)
        raise SqlSyntax(f"table function '{sig.name}' gives {len(sig.columns)} column"
                        f"{'s' if len(sig.columns) > 1 else ''} ({want}): name them AS t({want})", pos(b, lat),
                        code="E104")
    if left.cols is None:
        raise SqlSyntax("LATERAL TABLE over a relation whose columns are unknown here", pos(b, lat), code="E011")
    args = [qc.resolve(a, scope) for a in call.expressions]
    tname = alias.name if alias is not None and alias.name else "t"
    rows, k = f"{tname}_rows", 2
    while rows.lower() in {c.lower() for c in left.cols + names}:
        rows, k = f"{tname}_rows{k}", k + 1
    did = b.new_id(f"{base}_{sig.name}")
    value = exp.Anonymous(this=sig.name, expressions=args).sql(dialect="spark")
    i = b.add_transform({"id": did, "type": "derive", "inputs": [left.id], "columns": {rows: value}}, pos(b, lat))
    b.note_expr(("transforms", i, "columns", rows), [call])
    sid = b.new_id(f"{base}_lateral")
    gen = f"{'INLINE_OUTER' if outer else 'INLINE'}({rows}) AS ({', '.join(names)})"
    i = b.add_transform({"id": sid, "type": "select", "inputs": [did], "fields": [*left.cols, gen]}, pos(b, lat))
    b.note_expr(("transforms", i, "fields", len(left.cols)), [call])
    out = replace(left, id=sid, cols=list(left.cols) + names, table=None, static=False)
    scope.add(alias.name if alias is not None and alias.name else sid, out)
    return out
