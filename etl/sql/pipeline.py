"""Assemble the pipeline document from a script's statements (see etl.sql.build for the passes)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from etl.diagnostics import did_you_mean
from etl.sql.aggregate import keyed
from etl.sql.build import SETTINGS, Builder, pipeline_name, read_statement
from etl.sql.functions import DIALECTS
from etl.sql.intervals import flink_duration
from etl.sql.relation import Skip, quote_name
from etl.sql.script import SqlSyntax, Statement, report_syntax


def _target(stmt: Statement) -> str | None:
    words = [t.text for t in stmt.tokens[:4]]
    rest = [w for w in words[1:] if w.upper() not in ("INTO", "OVERWRITE", "TABLE")]
    return rest[0].lower() if rest else None


def _declared(stmt: Statement) -> str | None:
    """The name a CREATE TABLE / VIEW declares, read from its first tokens."""
    if stmt.kind not in ("view", "table"):
        return None
    skip = {"CREATE", "OR", "REPLACE", "TEMPORARY", "TEMP", "TABLE", "VIEW", "IF", "NOT", "EXISTS"}
    for tok in stmt.tokens[:8]:
        if tok.text.upper() not in skip or tok.token_type.name in ("IDENTIFIER", "STRING"):
            return tok.text.lower()
    return None


def assemble(b: Builder, statements: list[Statement]) -> dict[str, Any]:
    report, script = b.report, b.script
    b.sink_names = {t for t in (_target(s) for s in statements if s.kind == "insert") if t}
    parsed = []
    for st in statements:
        b.stmt_span = script.at(st.first)
        try:
            parsed.append(read_statement(script, st))
        except SqlSyntax as e:
            report_syntax(report, e)
            name = _declared(st)
            if name:
                b.broken.add(name)
    dims = _dimension_tables(parsed)
    seen: dict[str, Any] = {}
    for p in parsed:
        if p.kind == "table":
            t = p.table
            if t.name.lower() in seen:
                report.error("E200", f"table '{t.name}' is declared twice", t.span,
                             f"first declared at line {seen[t.name.lower()].line}")
                continue
            seen[t.name.lower()] = t.span
            b.tables[t.name.lower()] = t
            role = "sink" if t.name.lower() in b.sink_names else "dim" if t.name.lower() in dims else "source"
            b.stmt_span = t.span
            try:
                b.add_table(t, role)
            except SqlSyntax as e:
                report_syntax(report, e)
                b.broken.add(t.name.lower())
        elif p.kind == "set":
            _set(b, p.option)
        elif p.kind == "function":
            b.add_function(p.function)
    for p in parsed:
        if p.kind in ("view", "insert", "select"):
            _compile(b, p)
    _drop_unfed_sinks(b)
    return _document(b)


def _dimension_tables(parsed: list) -> set[str]:
    """Tables a lookup reads (FOR SYSTEM_TIME AS OF processing time; event time: a stream of versions)."""
    dims = set()
    proctimes = {p.table.proctime.lower() for p in parsed if p.kind == "table" and p.table.proctime}
    for p in parsed:
        q = getattr(p, "query", None)
        for t in (q.find_all(exp.Table) if q is not None else []):
            at = t.args["version"].expression if t.args.get("version") is not None else None
            if isinstance(at, exp.Anonymous) and at.name.upper() == "PROCTIME" or \
                    isinstance(at, exp.Column) and at.name.lower() in proctimes:
                dims.add(t.name.lower())
    return dims


def _set(b: Builder, o: Any) -> None:
    """`SET 'key' = 'value'`: a Flink setting etl reads, the SQL dialect, or a template variable (read before)."""
    key = o.key.strip("'\"").lower()
    if key.startswith("vars.") and len(key) > 5:
        return  # a template variable (read before rendering, etl.sql.script_vars)
    if key == "sql.dialect":  # the functions' meaning: Flink's (default) or rsqldb's (etl.sql.functions)
        if str(o.value).lower() not in DIALECTS:
            b.report.error("E102", f"unknown SQL dialect '{o.value}'", o.value_span,
                           did_you_mean(str(o.value).lower(), DIALECTS) or "dialects: " + ", ".join(DIALECTS))
        else:
            b.functions.dialect = str(o.value).lower()
    elif key not in SETTINGS:
        known = [*SETTINGS, "sql.dialect"]
        b.report.error("E100", f"unknown setting '{o.key}'", o.key_span,
                       did_you_mean(key, known) or "settings: " + ", ".join(known))
    else:
        b.settings[SETTINGS[key]] = (o.value, o)
        if key == "table.exec.state.ttl":
            _state_ttl(b, o)


def _state_ttl(b: Builder, o: Any) -> None:
    """Flink's `table.exec.state.ttl`: how long a key's state lives after its last access (processing time).
    A regular join's rows expire by it (its `ttl`, etl.sql.joins); the other state does not: W015 at the setting."""
    if not flink_duration(str(o.value)):
        b.report.error("E102", f"invalid state TTL '{o.value}'", o.value_span,
                       "a positive duration such as '1 h', '30 min', '10 s'")
        return
    b.report.warning("W015", f"SET 'table.exec.state.ttl' = '{o.value}': Flink drops a key's state {o.value} after "
                     "its last update (a continuous GROUP BY, Top-N or deduplication then starts that key again); "
                     "etl expires a regular join's rows by it and keeps the other state for good", o.key_span,
                     "an interval join's state is bounded by its time bound, a window's by the watermark: see "
                     "docs/sql.md, SQL joins")


def _drop_unfed_sinks(b: Builder) -> None:
    """A sink whose every INSERT failed (and was reported) is left out, so it adds no second error."""
    keep = [i for i, s in enumerate(b.sinks) if s["inputs"]]
    if len(keep) == len(b.sinks):
        return
    moved = {old: new for new, old in enumerate(keep)}
    for table in (b.smap.values, b.smap.keys):
        for path in [p for p in table if p[:1] == ("sinks",) and len(p) > 1]:
            span = table.pop(path)
            if path[1] in moved:
                table[("sinks", moved[path[1]]) + path[2:]] = span
    b.sinks = [b.sinks[i] for i in keep]


def _compile(b: Builder, p: Any) -> None:
    report = b.report
    b.stmt_span, b.stmt_start = b.script.at(p.stmt.first), p.stmt.first.start
    start = len(b.transforms)
    ids = set(b.ids)
    try:
        if p.kind == "view":
            if p.name.lower() in b.rels or p.name.lower() in b.tables:
                raise SqlSyntax(f"'{p.name}' is already declared", p.span, code="E200")
            rel = b.queries.compile(p.query, p.name, p.cols)
            rel = b.rename_last(rel, start, p.name)
            if p.stmt.explain:
                _rollback(b, start, ids, p)
                return
            b.rels[p.name.lower()] = rel
            return
        if p.kind == "select":  # a bare query: its rows to the console (Flink's SQL client shows them)
            _to_console(b, p, start, ids)
            return
        key = p.name.lower()
        if key in b.broken:
            raise Skip
        if key not in b.sink_index:
            known = [n for n in b.tables if n not in b.rels]
            raise SqlSyntax(f"unknown table '{p.name}' in INSERT INTO", p.span,
                            did_you_mean(p.name, known) or "declare it with CREATE TABLE ... WITH (...)", "E201")
        target = b.tables[key]
        declared = [c.name for c in target.columns if c.metadata is None]
        names = p.cols or declared or None
        i = b.sink_index[key]
        b.keep_flags = not keyed(b.sinks[i])
        try:
            rel = b.queries.compile(p.query, target.name, names, p.emit)
            if p.cols and declared:
                rel = fill_columns(b, p, rel, declared, target.name)
        finally:
            b.keep_flags = True
        if p.stmt.explain:
            _rollback(b, start, ids, p)
            return
        b.sinks[i]["inputs"].append(rel.id)
        b.smap.put(("sinks", i, "inputs", len(b.sinks[i]["inputs"]) - 1), p.span)
        b.smap.put(("sinks", i, "inputs"), p.span)
    except Skip:
        _rollback(b, start, ids, p)
    except SqlSyntax as e:
        _rollback(b, start, ids, p)
        if e.message.startswith("unknown table or view") and e.message.split("'")[1].lower() in b.broken:
            return
        report_syntax(report, e)


def _to_console(b: Builder, p: Any, start: int, ids: set) -> None:
    sid = b.new_id("select")
    rel = b.queries.compile(p.query, sid)
    if p.stmt.explain:
        _rollback(b, start, ids, p)
        return
    i = len(b.sinks)
    b.sinks.append({"id": sid, "type": "print", "inputs": [rel.id]})
    for path in (("sinks", i), ("sinks", i, "id"), ("sinks", i, "inputs"), ("sinks", i, "inputs", 0)):
        b.smap.put(path, p.span)


def fill_columns(b: Builder, p: Any, rel: Any, declared: list[str], base: str) -> Any:
    """INSERT INTO t (c1, c2) ...: the query's columns under those names, in t's order, t's other columns NULL
    (Flink's meaning), with a W016 naming them."""
    listed = {c.lower(): c for c in p.cols}
    unknown = [c for c in p.cols if c.lower() not in {d.lower() for d in declared}]
    if unknown:
        raise SqlSyntax(f"column '{unknown[0]}' is not a column of table '{p.name}'",
                        p.col_spans.get(unknown[0].lower(), p.span),
                        did_you_mean(unknown[0], declared) or "columns: " + ", ".join(declared), "E310")
    missing = [d for d in declared if d.lower() not in listed]
    if not missing and [c.lower() for c in p.cols] == [d.lower() for d in declared]:
        return rel
    if missing:
        b.report.warning("W016", f"INSERT INTO {p.name} lists {len(p.cols)} of its {len(declared)} columns: "
                         f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} NULL in every row, as in "
                         "Flink", p.span, "list every column of the table to write them all")
    types = b.tables[p.name.lower()].schema()
    fields = [quote_name(listed[d.lower()]) if d.lower() in listed else f"CAST(NULL AS {types[d]}) AS {quote_name(d)}"
              for d in declared]
    sid = b.new_id(f"{base}_columns")
    b.add_transform({"id": sid, "type": "select", "inputs": [rel.id], "fields": fields + list(rel.flags)}, p.span)
    from dataclasses import replace

    return replace(rel, id=sid, cols=list(declared), table=None, static=False)


def _rollback(b: Builder, start: int, ids: set, p: Any) -> None:
    """Forget the nodes of a failed statement; what it read is then unused: say nothing more about that."""
    for t in p.query.find_all(exp.Table):
        key = t.name.lower()
        if key in b.tables:
            b.smap.quiet.add(b.tables[key].span)
        rel = b.rels.get(key)
        for i, spec in enumerate(b.transforms[:start]):
            if rel is not None and spec["id"] == rel.id and ("transforms", i) in b.smap.values:
                b.smap.quiet.add(b.smap.values[("transforms", i)])
    del b.transforms[start:]
    b.ids = ids
    for table in (b.smap.values, b.smap.literals):
        for path in [k for k in table if k[:1] == ("transforms",) and k[1] >= start]:
            del table[path]
    if p.kind == "view":
        b.broken.add(p.name.lower())


def _document(b: Builder) -> dict[str, Any]:
    name = b.settings.get("name", (pipeline_name(b.script.file), None))
    data: dict[str, Any] = {"name": name[0]}
    if name[1] is not None:
        b.smap.put(("name",), name[1].value_span, name[1].key_span)
    for key in ("description", "checkpoint", "grok_patterns"):
        if key in b.settings:
            value, o = b.settings[key]
            data[key] = value
            b.smap.put((key,), o.value_span, o.key_span)
    trig = {k.split(".")[1]: v for k, v in b.settings.items() if k.startswith("trigger.")}
    if trig:
        data["trigger"] = {k: v[0] for k, v in trig.items()}
        for k, (_, o) in trig.items():
            b.smap.put(("trigger", k), o.value_span, o.key_span)
    if b.function_specs:
        data["functions"] = b.function_specs
    data["sources"] = b.sources
    if b.transforms:
        data["transforms"] = b.transforms
    data["sinks"] = b.sinks
    return data
