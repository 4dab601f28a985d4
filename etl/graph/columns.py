"""Column propagation through the DAG, and checks of every column reference.

Columns flow from sources that declare them (a `schema`, a text format, a
generator's fields) through each transform:

    source schema -> filter (+ tag_field in tag mode) -> derive adds -> select / rename / drop
    -> grok adds its captures (:int/:float typed) -> parse adds its schema -> union -> route
    -> window (group_by, window_start, window_end, aggregate aliases) -> join (both sides)
    -> lookup (table columns) -> dedupe -> sink

Where a node's columns cannot be known (a json source without a schema, a
component that did not validate) they are None, and every check that needs
them is skipped: an unknown column is never a false error. Column names match
case-insensitively, as in Spark.

Spark SQL expressions (filter `expr`, derive, select, route, window `having`,
sink keys) are parsed with sqlglot (spark dialect) to find the columns they
read; a parse error is E311 at the expression.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from etl.diagnostics import Report, Span, did_you_mean, short_repr
from etl.graph.names import find as _find
from etl.graph.names import suggest as _suggest
from etl.graph.model import Columns, Graph, Node, is_placeholder

Cols = dict[str, str]  # name -> spark type, in order
INTERNAL_PREFIX = "_etl_"  # etl's own columns (dead-letter reasons, payloads, join keys, ...): see etl/compile

_AGG_TYPES = {"count": "bigint", "count_distinct": "bigint", "approx_count_distinct": "bigint", "avg": "double"}
_TIME_TYPES = ("timestamp", "timestamp_ntz", "date", "bigint", "long", "int", "integer", "double")


def _tuple(cols: Cols | None) -> Columns | None:
    return None if cols is None else tuple(cols.items())


def _dict(cols: Columns | None) -> Cols | None:
    return None if cols is None else dict(cols)


class ColumnPass:
    """Walks the graph in topological order, filling `graph.columns` and reporting E302/E310/E311."""

    def __init__(self, graph: Graph, report: Report):
        self.g = graph
        self.report = report
        self.smap = graph.smap

    # ------------------------------------------------------------------ positions
    def span(self, node: Node, *keys: Any) -> Span:
        return self.smap.value(node.path + keys) if self.smap is not None else node.span

    def key_span(self, node: Node, *keys: Any) -> Span:
        return self.smap.key(node.path + keys) if self.smap is not None else node.span

    def inner(self, node: Node, keys: tuple, text: str, offset: int, line: int = 1) -> Span:
        if self.smap is None:
            return node.span
        return self.smap.inner(node.path + keys, text, offset, line)

    # ------------------------------------------------------------------ checks
    def need(self, cols: Cols | None, name: Any, span: Span, where: str) -> str | None:
        """Check that column `name` exists; return its canonical name (None when unknown/absent)."""
        if cols is None or not isinstance(name, str):
            return None
        root = name
        found = _find(cols, root)
        if found is None and "." in name:  # nested field: a.b reads column a
            root = name.split(".", 1)[0]
            found = _find(cols, root)
        if found is None:
            self._unknown(root, cols, span, where)
        return found

    def _unknown(self, name: str, cols: Cols, span: Span, where: str) -> None:
        hint = _suggest(name, cols) or ("known columns: " + ", ".join(list(cols)[:15])
                                             + (", ..." if len(cols) > 15 else "") if cols else "no columns known")
        self.report.error("E310", f"unknown column '{name}' in {where}", span, hint)

    def expr(self, node: Node, keys: tuple, text: Any, cols: Cols | None, where: str):
        """Parse a Spark SQL expression; report E311 on a parse error, E310 per unknown column."""
        from etl.graph.sql import parse

        if not isinstance(text, str):
            return None
        p = parse(text)
        if p.error is not None:
            off = p.error.col - 1 + (len(text) - len(text.lstrip()) if p.error.line == 1 else 0)
            self.report.error("E311", f"cannot parse Spark SQL in {where}: {p.error.message}",
                              self.inner(node, keys, text, off, p.error.line),
                              "write a Spark SQL expression, e.g. \"status >= 500 AND host LIKE 'web%'\"")
            return None
        if cols is not None:
            for name, off in p.columns:
                if _find(cols, name) is None:
                    self._unknown(name, cols, self.inner(node, keys, text, off), where)
        return p

    def check_types(self, node: Node, schema: dict[str, str] | None) -> None:
        """Declared column types must be Spark SQL types (E102 on the bad token, with did-you-mean)."""
        from etl.graph.types import KEYWORDS, parse_type

        for name, typ in (schema or {}).items():
            err = parse_type(typ)
            if err is None:
                continue
            hint = did_you_mean(err.token.lower(), KEYWORDS) if err.message.startswith("unknown type") else None
            hint = hint or "Spark SQL types: string, int, bigint, double, boolean, timestamp, date, array<...>, " \
                "map<...>, struct<name: type, ...>, decimal(p,s), varchar(n)"
            span = self.inner(node, ("schema", name), typ, err.offset) if isinstance(typ, str) \
                else self.span(node, "schema", name)
            self.report.error("E102", f"invalid Spark SQL type {short_repr(typ)} for column '{name}' of "
                              f"{node.kind} '{node.id}': {err.message}", span, hint)

    def internal(self, node: Node, name: Any, span: Span) -> None:
        """An output column may not take a name etl uses for its own columns (`_etl_...`): E102."""
        if isinstance(name, str) and name.lower().startswith(INTERNAL_PREFIX):
            self.report.error("E102", f"column name '{name}' of {node.kind} '{node.id}' is reserved: names starting "
                              f"with '{INTERNAL_PREFIX}' are etl's internal columns", span, "choose another name")

    def where(self, node: Node, field: str) -> str:
        return f"{node.kind} '{node.id}' ({field})"

    # ------------------------------------------------------------------ walk
    def run(self) -> dict[str, Columns | None]:
        out = self.g.columns
        for node in self.g.nodes.values():
            if is_placeholder(node.spec):
                out[node.id] = None
                for lab in node.outputs:
                    out[f"{node.id}.{lab}"] = None
                continue
            ins = [(e, _dict(self.g.columns_of(e.ref))) for e in node.inputs if e.role == "input"]
            fn: Callable[[Node, list], Cols | None] = getattr(self, f"_{node.kind}_{node.type}", None) \
                or getattr(self, f"_{node.kind}", self._passthrough)
            cols = fn(node, ins)
            out[node.id] = _tuple(cols)
            for lab in node.outputs:
                out[f"{node.id}.{lab}"] = _tuple(cols)
        return out

    @staticmethod
    def _first(ins: list) -> Cols | None:
        if len(ins) != 1:
            return None
        return None if ins[0][1] is None else dict(ins[0][1])

    def _passthrough(self, node: Node, ins: list) -> Cols | None:
        return self._first(ins)

    # ------------------------------------------------------------------ sources
    def _source(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        self.check_types(node, getattr(spec, "schema_", None))
        for name in getattr(spec, "schema_", None) or {}:
            self.internal(node, name, self.key_span(node, "schema", name))
        for key in ("text_column", "value_column"):
            if self.smap is not None and self.smap.has(node.path + (key,)):
                self.internal(node, getattr(spec, key, None), self.span(node, key))
        try:
            cols = spec.columns()
        except (AttributeError, TypeError):
            cols = None
        cols = dict(cols) if cols is not None else None
        et = getattr(spec, "event_time", None)
        if et is not None:
            self.event_time_field(node, ("event_time", "field"), et.field, cols)
        return cols

    def event_time_field(self, node: Node, keys: tuple, name: str, cols: Cols | None) -> None:
        found = self.need(cols, name, self.span(node, *keys), self.where(node, ".".join(map(str, keys))))
        if found is not None and cols is not None:
            typ = cols[found].lower()
            if typ not in _TIME_TYPES and typ != "unknown":
                self.report.error("E322", f"event time column '{found}' of {node.kind} '{node.id}' is {typ}, "
                                  "not a timestamp", self.span(node, *keys),
                                  "declare it as timestamp in the schema, or derive one: to_timestamp(col)")

    # ------------------------------------------------------------------ transforms
    def _transform_filter(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        cols = self._first(ins)
        if spec.expr is not None:
            self.expr(node, ("expr",), spec.expr, cols, self.where(node, "expr"))
        if cols is not None:
            from etl.spec.rules import walk_predicates

            absent = []
            for sr in self.g.rules.get(node.id, ()):
                if getattr(sr, "sigma", None) is not None:
                    absent.extend(self._sigma_fields(node, sr, cols))
                    continue
                for pred, ppath in walk_predicates(sr.rule.when, ("when",)):
                    self.need(cols, pred.field, sr.span_of(*ppath, "field"),
                              f"rule '{sr.rule.id}' of filter '{node.id}'")
            if absent:  # such a Sigma rule never matches: it is left out of the filter
                self.g.rules[node.id] = tuple(r for r in self.g.rules[node.id] if r.rule.id not in absent)
                if self.g.sigma.get(node.id) is not None:
                    self.g.sigma[node.id].absent = len(absent)
            if spec.mode == "tag":
                from etl.spec.sigma import DETAIL_TYPE

                cols[spec.tag_field] = DETAIL_TYPE if spec.details else "array<string>"
            elif spec.mode == "alerts":
                from etl.spec.sigma import ALERT_COLUMNS

                cols.pop(_find(cols, spec.tag_field) or spec.tag_field, None)
                cols.update(ALERT_COLUMNS)
        if spec.mode == "tag":
            self.internal(node, spec.tag_field, self.span(node, "tag_field"))
        return cols

    def _sigma_fields(self, node: Node, sr: Any, cols: Cols) -> list[str]:
        """W341 for a Sigma rule reading a column the events do not have; returns [its id] then."""
        missing = [(f, sf) for f, sf in sr.fields if _find(cols, f) is None and _find(cols, f.split(".", 1)[0]) is None]
        if not missing:
            return []
        self.report.warning("W341", f"{sr.name} (filter '{node.id}') reads "
                            + ", ".join(f"'{f}'" for f, _ in missing) + " that the events do not have: it never "
                            "matches", sr.field_span(missing[0][1]), "map the Sigma field onto an event column with "
                            "`sigma.field_mapping` (or a `preset`), or select the rules of this log source only")
        return [sr.rule.id]

    def _transform_derive(self, node: Node, ins: list) -> Cols | None:
        from etl.graph.sql import guess_type

        cols = self._first(ins)
        for name, text in node.spec.columns.items():
            self.internal(node, name, self.key_span(node, "columns", name))
            self.expr(node, ("columns", name), text, cols, self.where(node, f"columns.{name}"))
            if cols is not None:
                existing = _find(cols, name)
                typ = guess_type(text, cols)
                if existing is not None and existing != name:
                    del cols[existing]
                cols[existing or name] = typ
        return cols

    def _transform_select(self, node: Node, ins: list) -> Cols | None:
        from etl.graph.sql import guess_type

        spec = node.spec
        cols = self._first(ins)
        out: Cols | None = {}
        for i, text in enumerate(spec.fields or []):
            p = self.expr(node, ("fields", i), text, cols, self.where(node, f"fields[{i}]"))
            if out is None or p is None:
                out = None if p is None else out
                continue
            if p.star:
                out = None if cols is None else {**out, **cols}
            elif p.bare:
                src = _find(cols, p.name) if cols is not None else None
                out[src or p.name] = cols[src] if src else "unknown"
            else:
                self.internal(node, p.name, self.span(node, "fields", i))
                out[p.name or text.strip()] = guess_type(text, cols)
        if spec.fields is None:
            out = None if cols is None else dict(cols)
        for old, new in spec.rename.items():
            self.internal(node, new, self.span(node, "rename", old))
            found = self.need(out, old, self.key_span(node, "rename", old), self.where(node, "rename"))
            if found is not None and out is not None:
                out = {(new if k == found else k): v for k, v in out.items()}
        for i, name in enumerate(spec.drop):
            found = self.need(out, name, self.span(node, "drop", i), self.where(node, "drop"))
            if found is not None and out is not None:
                out.pop(found, None)
        return out

    def _transform_grok(self, node: Node, ins: list) -> Cols | None:
        from etl.grok import GrokError, expand

        spec = node.spec
        cols = self._first(ins)
        found = self.need(cols, spec.field, self.span(node, "field"), self.where(node, "field"))
        try:
            g = expand(spec.pattern, spec.custom_patterns or None)
        except GrokError as e:
            hint = e.hint
            if e.suggestions:
                hint = "did you mean " + " or ".join(f"'{s}'" for s in e.suggestions) + "?"
            msg = e.message.removeprefix("grok: ").split(" (did you mean")[0]
            span = self.span(node, "pattern")
            if e.name and self.smap is not None and f"%{{{e.name}" in spec.pattern:
                span = self.inner(node, ("pattern",), spec.pattern, spec.pattern.index(f"%{{{e.name}") + 2)
            if hint is None:
                hint = ("pattern names are those of Logstash (e.g. IP, NUMBER, COMBINEDAPACHELOG) or your "
                        "custom_patterns" if e.name else "custom_patterns values are regular expressions")
            self.report.error("E302", f"grok pattern of '{node.id}': {msg}", span, hint)
            return None
        for name, _ in g.columns:
            self.internal(node, name, self._capture_span(node, name))
        if cols is None:
            return None
        if not spec.keep_original and found is not None:
            cols.pop(found, None)
        spark = {"string": "string", "int": "int", "float": "float"}
        for name, typ in g.columns:
            cols[_find(cols, name) or name] = spark[typ]
        return cols

    def _capture_span(self, node: Node, name: str) -> Span:
        """Where grok capture `name` is written: in the pattern, else in the custom pattern defining it."""
        spec = node.spec
        for keys, text in [(("pattern",), spec.pattern)] + [(("custom_patterns", k), v)
                                                          for k, v in spec.custom_patterns.items()]:
            for mark in (f":{name}}}", f":{name}:", f"<{name}>"):
                if mark in text:
                    return self.inner(node, keys, text, text.index(mark) + 1)
        return self.span(node, "pattern")

    def _transform_parse(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        self.check_types(node, spec.schema_)
        for name in spec.schema_:
            self.internal(node, name, self.key_span(node, "schema", name))
        cols = self._first(ins)
        found = self.need(cols, spec.field, self.span(node, "field"), self.where(node, "field"))
        if cols is None:
            return None
        if not spec.keep_original and found is not None:
            cols.pop(found, None)
        for name, typ in spec.schema_.items():
            cols[_find(cols, name) or name] = typ
        return cols

    def _transform_union(self, node: Node, ins: list) -> Cols | None:
        if not ins or any(c is None for _, c in ins):
            return None
        out: Cols = {}
        for _, c in ins:
            for k, v in c.items():
                if _find(out, k) is None:
                    out[k] = v
        for e, c in ins:
            missing = [k for k in out if _find(c, k) is None]
            if missing:
                self.report.warning("W312", f"input '{e.ref}' of union '{node.id}' lacks column"
                                    f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} (filled with null)",
                                    e.span or node.span, "give every input of a union the same columns")
        return out

    def _transform_route(self, node: Node, ins: list) -> Cols | None:
        cols = self._first(ins)
        for label, cond in node.spec.routes.items():
            self.expr(node, ("routes", label), cond, cols, self.where(node, f"routes.{label}"))
        return cols

    def _transform_window(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        cols = self._first(ins)
        if spec.event_time is not None:
            self.event_time_field(node, ("event_time", "field"), spec.event_time.field, cols)
        from etl.graph.sql import guess_type

        out: Cols | None = {}
        for i, g in enumerate(spec.group_by):
            p = self.expr(node, ("group_by", i), g, cols, self.where(node, f"group_by[{i}]"))
            if p is None:
                out = None
            elif out is not None and p.bare:
                src = _find(cols, p.name) if cols is not None else None
                out[src or p.name] = cols[src] if src else "unknown"
            elif out is not None:
                out[p.name or g.strip()] = guess_type(g, cols)
        if out is None:
            return None
        out["window_start"] = "timestamp"
        out["window_end"] = "timestamp"
        for i, agg in enumerate(spec.aggregates):
            self.internal(node, agg.as_, self.span(node, "aggregates", i, "as"))
            src = None
            if agg.field is not None and agg.field != "*":
                src = self.need(cols, agg.field, self.span(node, "aggregates", i, "field"),
                                self.where(node, f"aggregates[{i}].field"))
            in_type = cols.get(src, "unknown") if (cols is not None and src) else "unknown"
            out[agg.as_] = self._agg_type(agg.fn, in_type)
        if spec.having is not None:
            self.expr(node, ("having",), spec.having, out, self.where(node, "having"))
        out.update(dict.fromkeys(spec.emit.flag_columns(), "boolean"))  # added after `having`, which cannot read them
        return out

    @staticmethod
    def _agg_type(fn: str, in_type: str) -> str:
        if fn in _AGG_TYPES:
            return _AGG_TYPES[fn]
        if fn == "sum":
            return "bigint" if in_type in ("int", "bigint", "long", "smallint", "tinyint") else \
                ("double" if in_type != "unknown" else "unknown")
        if fn in ("collect_list", "collect_set", "top_n"):
            return f"array<{in_type}>"
        return in_type

    def _transform_join(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        if len(ins) != 2:
            return None
        (le, left), (re_, right) = ins
        for i, key in enumerate(spec.on):
            self.need(left, key, self.span(node, "on", i), f"join '{node.id}' (on[{i}], left input '{le.ref}')")
            self.need(right, key, self.span(node, "on", i), f"join '{node.id}' (on[{i}], right input '{re_.ref}')")
        if spec.left_time is not None:
            self.event_time_field(node, ("left_time", "field"), spec.left_time.field, left)
        if spec.right_time is not None:
            self.event_time_field(node, ("right_time", "field"), spec.right_time.field, right)
        if left is None or right is None:
            return None
        out = dict(left)  # as etl.compile.joining: left columns, then the right's non-key ones, a name the
        for k, v in right.items():  # left already uses renamed <right input id>_<name>
            if k not in spec.on:
                out[f"{re_.src}_{k}" if k in left else k] = v
        return out

    def _transform_lookup(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        cols = self._first(ins)
        table_edge = next((e for e in node.inputs if e.role == "table"), None)
        table = _dict(self.g.columns_of(table_edge.ref)) if table_edge is not None else None
        for ev_col, tab_col in spec.on.items():
            self.need(cols, ev_col, self.key_span(node, "on", ev_col), self.where(node, "on"))
            self.need(table, tab_col, self.span(node, "on", ev_col), f"lookup table '{spec.table}'")
        for i, f in enumerate(spec.fields or []):
            self.need(table, f, self.span(node, "fields", i), f"lookup table '{spec.table}'")
        if cols is None or table is None:
            return None
        keys = {v.lower() for v in spec.on.values()}
        add = spec.fields if spec.fields is not None else [c for c in table if c.lower() not in keys]
        for f in add:
            src = _find(table, f)
            if src is not None and _find(cols, src) is None:
                cols[src] = table[src]
        return cols

    def _transform_dedupe(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        cols = self._first(ins)
        for i, k in enumerate(spec.keys):
            self.need(cols, k, self.span(node, "keys", i), self.where(node, f"keys[{i}]"))
        if spec.event_time is not None:
            self.event_time_field(node, ("event_time", "field"), spec.event_time.field, cols)
        return cols

    # ------------------------------------------------------------------ sinks
    def _sink(self, node: Node, ins: list) -> Cols | None:
        spec = node.spec
        cols = self._first(ins)
        key = getattr(spec, "key", None)
        if isinstance(key, str):
            self.expr(node, ("key",), key, cols, self.where(node, "key"))
        elif isinstance(key, list):
            for i, k in enumerate(key):
                self.need(cols, k, self.span(node, "key", i), self.where(node, f"key[{i}]"))
        for name, text in (getattr(spec, "headers", None) or {}).items():
            self.expr(node, ("headers", name), text, cols, self.where(node, f"headers.{name}"))
        for i, f in enumerate(getattr(spec, "id_fields", None) or []):
            self.need(cols, f, self.span(node, "id_fields", i), self.where(node, f"id_fields[{i}]"))
        return cols


def propagate_columns(graph: Graph, report: Report) -> dict[str, Columns | None]:
    """Fill `graph.columns` for every node (and route label) and check every column reference."""
    return ColumnPass(graph, report).run()


def names(cols: Iterable[tuple[str, str]] | None) -> list[str]:
    return [n for n, _ in cols or ()]
