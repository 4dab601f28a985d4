"""`GROK(field, 'pattern' [, 'legacy' | 'ecs-v1'])` in a query -> a `grok` transform with a `target`.

    SELECT GROK(msg, '%{IP:client} %{INT:bytes:int}').client FROM logs     -- a struct; .client is a field
    FROM logs, LATERAL TABLE(GROK(msg, '%{IP:c} %{WORD:v}')) AS t(c, v)    -- its top-level fields as columns

A scalar GROK is a struct of the pattern's captures, typed as their `:int` / `:float` say (the YAML grok's
types and field rules, etl.grok), NULL for a line that does not match: as a SQL function answers (the row goes
on). Each distinct call of a query (same column, pattern, library) becomes one `grok` transform on the query's
input, after its JOIN and before its WHERE, whose `target` is a column hidden from `*` and from INSERT's
mapping (etl.sql.query.Rel.hidden); the call reads that column. A value that does not convert (`%{WORD:n:int}`
on `abc`) and a line the regex gives up on stay dead letters, as with the YAML grok. The table form is a UDTF in
Flink's way: one row per match (so none for a line that does not match), `LEFT JOIN LATERAL TABLE(GROK(...)) AS
t(...) ON TRUE` keeps such a line with NULLs. The third argument names the library; without it, the script's
`SET 'grok.patterns' = 'ecs-v1'` (the pipeline's `grok_patterns`), else legacy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl.diagnostics import did_you_mean
from etl.sql.relation import Rel, Scope, pos
from etl.sql.script import SqlSyntax

_CLAUSES = ("expressions", "where", "group", "having")


def is_grok(n: exp.Expression) -> bool:
    return isinstance(n, exp.Anonymous) and n.name.upper() == "GROK"


def grok_calls(qc: Any, q: exp.Select, rel: Rel, scope: Scope, base: str) -> Rel:
    """The query's input plus one grok transform per distinct GROK call of its clauses; each call becomes a
    reference to its transform's target column (in place, in `q`)."""
    calls = [n for key in _CLAUSES for part in _parts(q.args.get(key)) for n in part.find_all(exp.Anonymous)
             if is_grok(n)]
    done: dict[tuple, str] = {}
    for call in calls:
        key = _arguments(qc, call, scope)
        if key not in done:
            rel, done[key] = _add(qc.b, call, key, rel, base)
        ref: Any = exp.column(done[key])
        starts = [n.meta["start"] for n in call.walk() if n.meta and n.meta.get("start") is not None]
        if starts:  # the column is where the call is written (diagnostics of its fields)
            ref.this.meta["start"] = min(starts)
        if call.parent is q:  # an unnamed SELECT item keeps the name Flink gives it
            ref = exp.alias_(ref, f"EXPR${q.expressions.index(call)}")
        call.replace(ref)
    return rel


def lateral(b: Any, lat: exp.Expression, call: exp.Anonymous, left: Rel, scope: Scope, base: str,
            names: list[str], outer: bool) -> Rel:
    """`LATERAL TABLE(GROK(...)) AS t(a, b)`: the pattern's top-level fields as columns a, b; a line that does not
    match gives no row (`outer`: a row with NULLs)."""
    from etl.grok import GrokError, expand  # the pattern library: only when a script calls GROK

    key = _arguments(b.queries, call, scope)
    if left.cols is None:
        raise SqlSyntax("LATERAL TABLE over a relation whose columns are unknown here", pos(b, lat), code="E011")
    try:
        fields = list(dict.fromkeys(f.path[0] for f in expand(key[1], None, key[2] or "legacy").fields
                                    if f.path[0] != "@metadata"))
    except GrokError:
        fields = None  # validation reports it at the pattern (E302)
    if fields is not None and len(fields) != len(names):
        want = ", ".join(fields) or "none"
        raise SqlSyntax(f"GROK gives {len(fields)} column{'s' if len(fields) != 1 else ''} ({want}): name them "
                        f"AS t({', '.join(fields)})", pos(b, lat), code="E104")
    rel, target = _add(b, call, key, left, base)
    if not outer:
        fid = b.new_id(f"{base}_grok_matched")
        b.add_transform({"id": fid, "type": "filter", "inputs": [rel.id], "expr": f"{target} IS NOT NULL"},
                        pos(b, lat))
        rel = replace(rel, id=fid)
    sid = b.new_id(f"{base}_lateral")
    got = fields if fields is not None else names
    cols = [f"{target}.{_q(f)} AS {_q(n)}" for f, n in zip(got, names, strict=True)]
    i = b.add_transform({"id": sid, "type": "select", "inputs": [rel.id], "fields": [*left.cols, *cols]}, pos(b, lat))
    for k in range(len(left.cols), len(left.cols) + len(cols)):
        b.note_expr(("transforms", i, "fields", k), [call])
    out = replace(left, id=sid, cols=list(left.cols) + names, table=None, static=False, hidden=())
    alias = lat.args.get("alias")
    scope.add(alias.name if alias is not None and alias.name else sid, out)
    return out


def _parts(arg: Any) -> list[exp.Expression]:
    if arg is None:
        return []
    return list(arg) if isinstance(arg, list) else [arg]


def _arguments(qc: Any, call: exp.Anonymous, scope: Scope) -> tuple[str, str, str | None]:
    """(column, pattern, library or None) of a GROK call, checked."""
    from etl.grok import LIBRARIES  # the pattern library: only when a script calls GROK

    b = qc.b
    args = list(call.expressions)
    if len(args) not in (2, 3):
        raise SqlSyntax(f"GROK takes 2 or 3 arguments, not {len(args)}", pos(b, call),
                        "GROK(field, '%{IP:client} ...' [, 'legacy' | 'ecs-v1'])", "E012")
    col = qc.resolve(args[0].copy(), scope)
    if not isinstance(col, exp.Column) or isinstance(col.this, exp.Star):
        raise SqlSyntax("GROK reads a column", pos(b, args[0]), "compute the text in a view first, then GROK "
                        "its column", "E011")
    for k, what in ((1, "pattern"), (2, "library")):
        if k < len(args) and not (isinstance(args[k], exp.Literal) and args[k].is_string):
            raise SqlSyntax(f"GROK's {what} is a string literal", pos(b, args[k]), code="E011")
    lib = args[2].this if len(args) == 3 else None
    if lib is not None and lib not in LIBRARIES:
        raise SqlSyntax(f"unknown grok pattern library '{lib}'", pos(b, args[2]),
                        did_you_mean(lib, list(LIBRARIES)) or "libraries: " + ", ".join(LIBRARIES), "E102")
    return col.name, args[1].this, lib


def _add(b: Any, call: exp.Anonymous, key: tuple, rel: Rel, base: str) -> tuple[Rel, str]:
    column, pattern, lib = key
    taken = {c.lower() for c in [*(rel.cols or []), *rel.hidden]}
    k = 1
    while f"_grok{k}" in taken:
        k += 1
    target = f"_grok{k}"
    gid = b.new_id(f"{base}_grok")
    spec: dict[str, Any] = {"id": gid, "type": "grok", "inputs": [rel.id], "field": column, "pattern": pattern,
                            "target": target}
    if lib is not None:
        spec["patterns"] = lib
    i = b.add_transform(spec, pos(b, call))
    args = call.expressions
    b.smap.put(("transforms", i, "field"), pos(b, args[0]))
    b.smap.put(("transforms", i, "pattern"), pos(b, args[1]))
    b.smap.literals[("transforms", i, "pattern")] = pos(b, args[1])
    if lib is not None:
        b.smap.put(("transforms", i, "patterns"), pos(b, args[2]))
    return replace(rel, id=gid, table=None, static=False, hidden=(*rel.hidden, target)), target


def _q(name: str) -> str:
    import re

    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"
