"""Statements -> the pipeline document (the same mapping a YAML file gives) + a source map into the script.

Two passes: read every statement (tables, functions, SETs; views and INSERTs as
parsed queries), then map tables onto sources and sinks (a table INSERTed into
is a sink; one joined `FOR SYSTEM_TIME AS OF` is a dimension table) and compile
the queries in script order. A statement with an error is reported and skipped;
statements depending on it are skipped quietly (no cascade of errors).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from sqlglot import exp

from etl import registry
from etl.diagnostics import Report, Span, did_you_mean
from etl.load import nesting
from etl.load.paths import module_reader
from etl.spec.functions import FunctionSpec
from etl.spec.signature import SignatureError, read_signature
from etl.sql.catalog import lookup, spark_calls
from etl.sql.connectors import map_table
import etl.sql.ddl as ddl
from etl.sql.dialect import DIALECT, too_deep
from etl.sql.division import known_types
from etl.sql.functions import Functions, names, unknown_hint
from etl.sql.intervals import duration_text
from etl.sql.joins import Joins
from etl.sql.query import QueryCompiler
from etl.sql.relation import Rel, pos
from etl.sql.script import Script, SqlSyntax, Statement
from etl.sql.smap import SqlSourceMap

SETTINGS = {"pipeline.name": "name", "name": "name", "description": "description", "checkpoint": "checkpoint",
            "trigger.mode": "trigger.mode", "trigger.interval": "trigger.interval",
            "table.exec.emit.allow-lateness": "allow-lateness",  # EMIT ... AFTER WATERMARK (etl.sql.window)
            "table.exec.state.ttl": "state-ttl",  # a regular join's ttl (etl.sql.joins); W015 at the SET
            "grok.patterns": "grok_patterns"}  # GROK's library (etl.sql.grok)


class Builder:
    def __init__(self, script: Script, report: Report):
        self.script, self.report = script, report
        self.smap = SqlSourceMap(script.file)
        self.smap.put((), Span(script.file, 1, 1))
        self.sources: list[dict] = []
        self.transforms: list[dict] = []
        self.sinks: list[dict] = []
        self.rels: dict[str, Rel] = {}
        self.ids: set[str] = set()
        self.sink_names: set[str] = set()
        self.sink_index: dict[str, int] = {}
        self.broken: set[str] = set()
        self.tables: dict[str, ddl.Table] = {}
        self.settings: dict[str, Any] = {}
        self.keep_flags = True  # False while compiling an INSERT into a sink that upserts (etl.sql.aggregate)
        self.functions = Functions(self._unknown_function, at=lambda n: pos(self, n),
                                   on_division=self._division_warning, on_differs=self._differs_warning)
        self.types: dict[str, dict[str, str]] = {}  # node id (lower) -> its columns' types (lower name), where known
        self.queries = QueryCompiler(self)
        self.joins = Joins(self)
        self.stmt_span = Span(script.file, 1, 1)
        self.stmt_start = 0  # the offset of the statement being compiled
        self.function_specs: list[dict] = []
        self.udfs: dict[str, Any] = {}  # lower name -> etl.spec.signature.Signature (None: not readable)

    def add_function(self, f: ddl.Function) -> None:
        """CREATE FUNCTION f AS 'module:callable': a `functions:` entry; its signature is read from the module
        (etl.spec.signature; a module that cannot be read is reported by validation, at the string)."""
        i = len(self.function_specs)
        entry = {"name": f.name, "callable": f.target}
        self.function_specs.append(entry)
        self.smap.put(("functions", i), f.span)
        self.smap.put(("functions", i, "name"), f.span)
        self.smap.put(("functions", i, "callable"), f.target_span or f.span)
        try:
            base = str(Path(self.script.file).parent)
            sig = read_signature(FunctionSpec.model_validate(entry), base, module_reader(base))
        except (SignatureError, ValueError):
            sig = None
        self.udfs[f.name.lower()] = sig

    def udf(self, name: str, kind: str) -> Any:
        """The signature of the script's function `name` of `kind` (None: not one)."""
        sig = self.udfs.get(name.lower())
        return sig if sig is not None and sig.kind == kind else None

    def _unknown_function(self, call: exp.Anonymous) -> None:
        if call.name.lower() in self.udfs:  # a function of the script (its calls are checked by validation)
            return
        raise SqlSyntax(f"unknown function '{call.name}'", pos(self, call), unknown_hint(call.name), "E012")

    def _division_warning(self, d: exp.Div) -> None:
        """W015 at a `/` whose operands' types are unknown here (etl.sql.division)."""
        starts = [n.meta["start"] for n in d.expression.walk() if n.meta and n.meta.get("start") is not None]
        at = min(starts) if starts else None
        while at is not None and at > 0 and self.script.text[at - 1] in " \t\r\n(":
            at -= 1  # back to the `/` before the right operand
        span = self.script.span(at - 1) if at and self.script.text[at - 1] == "/" else pos(self, d)
        self.report.warning("W015", "Flink divides two integers into an integer (7 / 2 is 3, -7 / 2 is -3), Spark "
                            "into a DOUBLE (3.5): the type of an operand is unknown here, so etl keeps Spark's "
                            "division", span, "CAST the operands: CAST(a AS DOUBLE) / b for a fraction, CAST(a AS "
                            "BIGINT) / CAST(b AS BIGINT) for Flink's integer division")

    def _differs_warning(self, call: exp.Expression, row: Any) -> None:
        """W015 at a call of a function whose meaning differs from Flink's, naming the difference (the note of its
        row in etl/sql/flink_functions.tsv)."""
        at = call.meta.get("start")
        starts = [n.meta["start"] for n in call.walk() if n.meta and n.meta.get("start") is not None]
        if at is None and starts:  # the name has no position of its own: it ends before the first argument's `(`
            before = self.script.text[:min(starts)].rstrip().removesuffix("(").rstrip()
            name = next((n for n in row.names if before.upper().endswith(n)), None)
            at = len(before) - len(name) if name else min(starts)
        elif at is None:  # CURRENT_DATE: the first of its names in the statement
            found = re.compile(r"\b(?:" + "|".join(row.names) + r")\b", re.I).search(self.script.text, self.stmt_start)
            at = found.start() if found else None
        name = call.name.upper() if isinstance(call, exp.Anonymous) else \
            next((n for n in row.names if isinstance(call, exp.Func) and n == call.sql_name()), row.names[0])
        self.report.warning("W015", f"{name} differs from Flink's: {row.note}",
                            self.script.span(at) if at is not None else self.stmt_span,
                            "docs/reference/sql-functions.md: the table of Flink's functions")

    def set_types(self, node_id: str, types: dict[str, str]) -> None:
        """The known types of a node's columns (lower-case names; a column left out is unknown)."""
        self.types[node_id.lower()] = {k.lower(): v for k, v in types.items()}

    def scope_types(self, scope: Any) -> dict[str, str]:
        """The known types of the columns a query reads (each relation's, by the name it has in the query; a name
        two relations give different types is unknown)."""
        out: dict[str, str] = {}
        clash: set[str] = set()
        for rel, rename in scope.entries.values():
            lowered = {k.lower(): v for k, v in rename.items()}
            for c, t in self.types.get(rel.id.lower(), {}).items():
                name = lowered.get(c, c).lower()
                if out.get(name, t) != t:
                    clash.add(name)
                out[name] = t
        return {k: v for k, v in out.items() if k not in clash}

    # ------------------------------------------------------------------ helpers used by the compilers
    def visible_names(self) -> list[str]:
        return [n for n in self.rels if n not in self.sink_names]

    def new_id(self, want: str) -> str:
        want = re.sub(r"[^A-Za-z0-9_\-]", "_", want)
        if want[:1].isdigit():
            want = f"_{want}"
        nid, k = want, 2
        while nid.lower() in self.ids:
            nid, k = f"{want}_{k}", k + 1
        self.ids.add(nid.lower())
        return nid

    def add_transform(self, spec: dict, span: Span) -> int:
        i = len(self.transforms)
        self.transforms.append(spec)
        self.smap.put(("transforms", i), span)
        for key in spec:
            self.smap.put(("transforms", i, key), span)
        return i

    def note_expr(self, path: tuple, nodes: list) -> None:
        names: dict[str, Span] = {}
        first = None
        for n in nodes:
            if n is None:
                continue
            at = pos(self, n)
            first = first or at
            for col in n.find_all(exp.Column):
                names.setdefault(col.name.lower(), pos(self, col))
            for dot in n.find_all(exp.Dot):  # a struct's field: GROK(...).client
                names.setdefault(dot.name.lower(), pos(self, dot.expression))
            for call in n.find_all(exp.Anonymous):  # calls of the script's functions (checked by validation)
                if call.name.lower() in self.udfs:
                    names.setdefault(call.name.lower(), pos(self, call))
        self.smap.names[path] = names
        if first is not None:
            self.smap.put(path, first)

    # ------------------------------------------------------------------ tables
    def add_table(self, t: ddl.Table, role: str) -> None:
        m = map_table(t, role, self.report)
        if m is None:
            self.broken.add(t.name.lower())
            return
        key = t.name.lower()
        if role == "sink":
            i = len(self.sinks)
            self.sinks.append({"id": t.name, **m.spec, "inputs": []})
            self.sink_index[key] = i
            section = "sinks"
        else:
            i = len(self.sources)
            self.sources.append({"id": t.name, **m.spec})
            section = "sources"
        self.ids.add(key)
        self.smap.put((section, i), t.span)
        self.smap.put((section, i, "id"), t.span)
        for k, (ks, vs) in m.spans.items():
            self.smap.put((section, i, k), vs, ks)
        for c in t.columns:
            self.smap.put((section, i, "schema", c.name), c.span, c.span)
        if role == "sink":
            return
        wm_col = next((c for c in t.columns if t.watermark and c.name == t.watermark[0]), None)
        if m.type == "rocketmq" and wm_col is not None and wm_col.type == "timestamp":
            # rsqldb's own source: its documented messages carry epoch milliseconds
            self.report.warning("W015", f"rsqldb reads a number in TIMESTAMP column '{wm_col.name}' as epoch "
                                "milliseconds, etl (Spark) as epoch seconds", wm_col.span,
                                f"for epoch milliseconds declare `{wm_col.name} BIGINT` (etl reads a BIGINT time "
                                "column as epoch milliseconds); text such as 2026-01-10 09:00:00 reads the same")
        table: Any = registry.lookup("source", m.type).spec if role == "dim" else None  # a lookup's table
        rel = Rel(t.name, [c.name for c in t.columns if c.metadata is None], t.watermark[0] if t.watermark else None,
                  t.proctime, t, static=table is not None and table.LOOKUP_TABLE)
        declared = {c.name: c.type for c in t.columns}
        self.set_types(t.name, declared)
        meta = [c for c in t.columns if c.metadata is not None]
        if meta and m.parse is None:
            self.report.error("E011", f"metadata column '{meta[0].name}' needs a message table read as text "
                              "(isJsonData = 'false' or format = 'csv')", meta[0].span,
                              "message metadata: key, topic, timestamp, tags (rocketmq), headers (kafka)")
            self.broken.add(key)
            return
        if m.parse is not None:
            if "event_time" in m.spec:  # the time column is parsed from the message: downstream nodes take it
                rel.wm = m.spec.pop("event_time")
                self.sources[-1].pop("event_time", None)
            pid = self.new_id(f"{t.name}_parsed")
            self.add_transform({"id": pid, "inputs": [t.name], **m.parse}, t.span)
            # the table's columns are exactly the declared ones: metadata by name, the rest parsed
            fields = []
            for c in t.columns:
                read = c.name if c.metadata is None else _metadata_key(c, m.type, self.report)
                fields.append(c.name if read == c.name else f"{read} AS {c.name}")
            sid = self.new_id(f"{t.name}_columns")
            self.add_transform({"id": sid, "type": "select", "inputs": [pid], "fields": fields}, t.span)
            rel = replace(rel, id=sid, cols=[c.name for c in t.columns])
            self.set_types(sid, declared)
        computed = [c for c in t.computed if not c.proctime]
        if t.watermark is not None and any(c.name == t.watermark[0] for c in computed) and role != "sink":
            # Flink: `ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts ...`: the time column exists after the derive
            i = len(self.sources) - 1
            et = self.sources[i].pop("event_time", None) or (rel.wm or {})
            rel.wm = et or None
        if computed:
            cols: dict[str, str] = {}
            nodes = []
            for cc in computed:
                tree = parse_expr(self.script, cc.tokens)
                tree = self.functions.translate(tree, self.types[t.name.lower()])
                cols[cc.name] = tree.sql(dialect="spark")
                nodes.append(tree)
            did = self.new_id(f"{t.name}_computed")
            i = self.add_transform({"id": did, "type": "derive", "inputs": [rel.id], "columns": cols}, t.span)
            for cc, n in zip(computed, nodes, strict=True):
                self.note_expr(("transforms", i, "columns", cc.name), [n])
            rel = replace(rel, id=did, cols=(rel.cols or []) + list(cols))
            self.set_types(did, {**declared, **known_types(nodes, list(cols), self.types[t.name.lower()])})
        self.rels[key] = rel

    def rename_last(self, rel: Rel, start: int, final: str) -> Rel:
        """Give the last node a query made the name of its view."""
        if not self.transforms[start:] or self.transforms[-1]["id"] != rel.id:
            return rel
        self.ids.discard(rel.id.lower())
        new = self.new_id(final)
        self.transforms[-1]["id"] = new
        if rel.id.lower() in self.types:
            self.types[new.lower()] = self.types.pop(rel.id.lower())
        return replace(rel, id=new)


_META = {"tag": "tags", "tags": "tags", "topic": "topic", "key": "key", "keys": "key", "timestamp": "timestamp",
         "borntimestamp": "timestamp", "headers": "headers"}


def _metadata_key(c: ddl.Column, family: str, report: Report) -> str:
    """The message column a metadata column reads (rsqldb `header` names and Flink METADATA keys)."""
    have = ["key", "topic", "timestamp"] + (["tags"] if family == "rocketmq" else ["headers"])
    meta = c.metadata or ""
    key = _META.get(meta.lower().replace("_", "").replace("-", ""), meta)
    if key not in have:
        report.error("E102", f"unknown metadata key '{meta}' for a {family} table", c.span,
                     did_you_mean(meta, have) or f"keys: {', '.join(have)}")
        return c.name
    return key


def parse_expr(script: Script, tokens: list) -> exp.Expression:
    from sqlglot.errors import ParseError

    deep = too_deep(tokens)
    if deep is not None:
        raise SqlSyntax(nesting.message("the expression is"), script.at(deep), nesting.HINT)
    try:
        trees = DIALECT.parser().parse(tokens, script.text)
    except ParseError as e:
        raise wrong_arity(script, tokens) or parse_error(script, e) from None
    if len(trees) != 1 or trees[0] is None:
        raise SqlSyntax("expected one expression", script.at(tokens[0]))
    return cast(exp.Expression, trees[0])


def wrong_arity(script: Script, tokens: list) -> SqlSyntax | None:
    """E012 for a call of a Spark function with a number of arguments Spark does not take, in an expression sqlglot
    cannot parse (sqlglot refuses some of those calls with a vaguer message); a Flink/rsqldb function etl rewrites
    has its own count (etl.sql.functions)."""
    if not tokens:
        return None
    base = tokens[0].start
    for call in spark_calls(script.text[base:tokens[-1].end + 1]):
        fn = lookup(call.name)
        if fn is None or call.syntax or call.name.upper() in names() or fn.takes(len(call.args)):
            continue
        return SqlSyntax(f"{fn.name} takes {fn.arity_text()}, got {len(call.args)}", script.span(base + call.offset),
                         f"Spark refuses the call (WRONG_NUM_ARGS); see DESCRIBE FUNCTION {fn.name}", "E012")
    return None


def parse_error(script: Script, e: Exception) -> SqlSyntax:
    errs = getattr(e, "errors", None) or []
    if not errs:
        return SqlSyntax(f"cannot parse: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                         Span(script.file, 1, 1))
    first = errs[0]
    desc = re.sub(r"\x1b\[[0-9;]*m", "", str(first.get("description") or "syntax error"))
    desc = re.sub(r"<Token token_type: TokenType\.\w+, text: ([^,]*), .*?>", r"'\1'", desc)
    hl = re.sub(r"\x1b\[[0-9;]*m", "", str(first.get("highlight") or ""))
    if desc.startswith("Required keyword"):
        desc = "incomplete expression: an operand is missing"
    elif desc.startswith("Invalid expression / Unexpected token") or desc.startswith("Expecting"):
        desc = f"unexpected '{hl}'" + (f" ({desc.lower()})" if desc.startswith("Expecting") else "")
    line, col = int(first.get("line") or 1), int(first.get("col") or 1)
    return SqlSyntax(desc, Span(script.file, line, max(1, col - len(hl) + 1)))


def pipeline_name(file: str) -> str:
    stem = Path(file).stem
    name = re.sub(r"[^A-Za-z0-9_\-]", "-", stem)
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"



# ---------------------------------------------------------------------- statements
class Parsed:
    """One statement read in the first pass."""

    table: Any  # set by kind: table, option or function
    option: Any
    function: Any

    def __init__(self, stmt: Statement, kind: str, **kw: Any):
        self.stmt, self.kind = stmt, kind
        self.__dict__.update(kw)


def read_statement(script: Script, stmt: Statement) -> Parsed:
    c = ddl.Cursor(script, stmt)
    if stmt.kind == "table":
        return Parsed(stmt, "table", table=ddl.parse_table(script, stmt))
    if stmt.kind == "function":
        return Parsed(stmt, "function", function=ddl.parse_function(script, stmt))
    if stmt.kind == "set":
        return Parsed(stmt, "set", option=ddl.parse_set(script, stmt))
    if stmt.kind == "view":
        name = c.create("VIEW", "a view name")
        cols = None
        if c.is_("("):
            c.take()
            cols = [t.text for t in c.until_close() if t.token_type.name != "COMMA"]
        c.expect("AS")
        query = _query(script, stmt.tokens[c.i:], c)
        return Parsed(stmt, "view", name=name.text, span=script.at(name), cols=cols, query=query)
    if stmt.kind == "insert":
        c.expect("INSERT")
        c.expect("INTO", "OVERWRITE")
        if c.is_("TABLE"):
            c.take()
        name = c.name("a table name")
        cols = None
        col_spans: dict[str, Any] = {}
        if c.is_("("):
            c.take()
            listed = [t for t in c.until_close() if t.token_type.name != "COMMA"]
            cols = [t.text for t in listed]
            col_spans = {t.text.lower(): script.at(t) for t in listed}
        rest = stmt.tokens[c.i:]
        emit = None
        depth = 0
        for k, tok in enumerate(rest):
            depth += tok.token_type.name == "L_PAREN"
            depth -= tok.token_type.name == "R_PAREN"
            if depth == 0 and tok.text.upper() == "EMIT" and tok.token_type.name not in ("STRING", "IDENTIFIER"):
                emit = _emit(script, rest[k:])
                rest = rest[:k]
                break
        if not rest:
            raise SqlSyntax("INSERT INTO needs a query", c.where())
        query = _query(script, rest, c)
        return Parsed(stmt, "insert", name=name.text, span=script.at(name), cols=cols, query=query, emit=emit,
                      col_spans=col_spans)
    if stmt.kind == "select":  # a bare query: its rows go to the console (etl.sql.pipeline)
        return Parsed(stmt, "select", name=None, span=script.at(stmt.first), query=_query(script, stmt.tokens, c))
    first = stmt.first
    raise SqlSyntax(f"unsupported statement starting with '{first.text}'", script.at(first),
                    "statements: CREATE TABLE, CREATE VIEW, INSERT INTO, CREATE FUNCTION, SET, SELECT, EXPLAIN, "
                    "statement sets", "E011")


def _query(script: Script, tokens: list, c: Any) -> exp.Expression:
    if not tokens:
        raise SqlSyntax("expected a query", c.where())
    tree = parse_expr(script, tokens)
    if not isinstance(tree, (exp.Select, exp.Union, exp.Subquery)):
        raise SqlSyntax("expected a SELECT query", script.at(tokens[0]))
    return tree


_UNITS = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def _emit(script: Script, toks: list) -> dict:
    """EMIT WITH DELAY 'n' UNIT BEFORE WATERMARK [, WITH DELAY 'n' UNIT | WITHOUT DELAY AFTER WATERMARK]:
    the early-firing interval of the window, and its late firing (`late: update`, at most one update row per
    window every 'n' UNIT; WITHOUT DELAY: one per micro-batch). Resolved by etl.sql.window.emit_spec."""
    words = [t.text.upper() for t in toks]
    span = script.at(toks[0])
    out: dict[str, Any] = {"span": span}
    i = 1
    while i < len(toks):
        if words[i] == ",":
            i += 1
            continue
        if words[i:i + 2] == ["WITHOUT", "DELAY"]:
            where, delay, step = words[i + 2:i + 4], None, 4
        elif words[i:i + 2] == ["WITH", "DELAY"] and i + 5 < len(toks) + 1:
            n, unit = toks[i + 2].text, words[i + 3].rstrip("S")
            if unit not in _UNITS or not re.fullmatch(r"\d+(\.\d+)?", n):
                raise SqlSyntax("expected WITH DELAY 'n' SECOND|MINUTE|HOUR", script.at(toks[i + 2]))
            where, delay, step = words[i + 4:i + 6], float(n) * _UNITS[unit], 6
        else:
            raise SqlSyntax("expected EMIT WITH DELAY 'n' UNIT BEFORE WATERMARK or ... AFTER WATERMARK",
                            script.at(toks[i]))
        if where == ["BEFORE", "WATERMARK"]:
            if not delay:
                raise SqlSyntax("EMIT ... BEFORE WATERMARK needs a delay: early rows go out at most that often",
                                script.at(toks[i]), "write WITH DELAY '1' SECOND BEFORE WATERMARK", "E011")
            out["early"] = duration_text(delay)
        elif where == ["AFTER", "WATERMARK"]:
            out["late"] = duration_text(delay) if delay else None
            out["late_span"] = script.at(toks[i])
        else:
            at = toks[min(i + step - 2, len(toks) - 1)]
            raise SqlSyntax("expected BEFORE WATERMARK or AFTER WATERMARK", script.at(at))
        i += step
    if "early" not in out and "late_span" not in out:
        raise SqlSyntax("EMIT needs WITH DELAY 'n' UNIT BEFORE WATERMARK or AFTER WATERMARK", span)
    return out
