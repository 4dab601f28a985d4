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

import re
from typing import Any
from collections.abc import Iterable

from etl.diagnostics import Report, Span, did_you_mean, short_repr
from etl.graph.model import Columns, Graph, Node, is_placeholder
from etl.graph.names import find as _find, suggest as _suggest
from etl.graph.types import KEYWORDS, parse_type, struct_fields
from etl.settings import current
from etl.sql.functions import spark_functions

Cols = dict[str, str]  # name -> spark type, in order
INTERNAL_PREFIX = "_etl_"  # etl's own columns (dead-letter reasons, payloads, join keys, ...): see etl/compile
# the boolean columns windows (emit early / late update: etl.spec.transforms.Emit.flag_columns), continuous
# aggregates and top_n (etl.spec.continuous) add to their rows: a user column of that name was ambiguous at run
FLAG_COLUMNS = ("_final", "_retract", "_update")

# an arithmetic operator or a comparison (etl.graph.calls.check_operators)
_OPERATOR = re.compile(r"[-+*/%=<>]|\|\||\b(?:div|in|between|distinct)\b", re.I)
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
        """Check that column `name` exists; return its name (None when unknown/absent). A name in a pipeline's
        own keys (a rule's field, group_by, keys, on, an aggregate's field, event_time ...) matches as written,
        as etl's engines read it; a Spark SQL expression (`ColumnPass.expr`) resolves case-insensitively, as Spark."""
        if cols is None or not isinstance(name, str):
            return None
        root = name if name in cols or "." not in name else name.split(".", 1)[0]
        if root in cols:
            if root != name:  # nested field: a.b reads column a
                self.nested(root, cols[root], name.split("."), span, where)
            return root
        other = _find(cols, root)
        if other is not None:
            self.report.error("E310", f"unknown column '{root}' in {where}", span,
                              f"did you mean '{other}'? (column names in a pipeline's keys match as written)")
            return None
        self._unknown(root, cols, span, where)
        return None

    def nested(self, column: str, typ: str, parts: list[str], span: Span, where: str) -> None:
        """E310 for a nested path (`user.geo.contry`) that the column's declared type does not have."""
        from etl.graph.fields import missing_field

        miss = missing_field(column, typ, parts[1:])
        if miss is not None:
            self.report.error("E310", f"unknown field '{'.'.join(parts[:miss.index + 2])}' in {where}: "
                              f"{miss.message}", span, miss.hint)

    def _unknown(self, name: str, cols: Cols, span: Span, where: str) -> None:
        hint = _suggest(name, cols) or ("known columns: " + ", ".join(list(cols)[:15])
                                             + (", ..." if len(cols) > 15 else "") if cols else "no columns known")
        self.report.error("E310", f"unknown column '{name}' in {where}", span, hint)

    def expr(self, node: Node, keys: tuple, text: Any, cols: Cols | None, where: str):
        """Parse a Spark SQL expression; report E311 on a parse error, E310 per unknown column, E012/E102 per bad
        call of a Spark function (etl.graph.calls), E352/E353 per bad call of a pipeline function."""
        from etl.graph.calls import check_casts, check_operators, check_spark_calls
        from etl.graph.sql import parse

        if not isinstance(text, str):
            return None
        p = parse(text)
        if p.error is not None:
            if check_spark_calls(self, node, keys, text, None, where):  # sqlglot's own count, said precisely
                return None
            off = p.error.col - 1 + (len(text) - len(text.lstrip()) if p.error.line == 1 else 0)
            self.report.error("E311", f"{'' if p.error.hint else 'cannot parse '}Spark SQL in {where}: {p.error.message}",
                              self.inner(node, keys, text, off, p.error.line), p.error.hint
                              or "write a Spark SQL expression, e.g. \"status >= 500 AND host LIKE 'web%'\"")
            return None
        if cols is not None:
            for name, off in p.columns:
                if _find(cols, name) is None:
                    self._unknown(name, cols, self.inner(node, keys, text, off), where)
            for path, off in p.paths:
                found = _find(cols, path[0])
                if found is not None:
                    self.nested(found, cols[found], list(path), self.inner(node, keys, text, max(off, 0)), where)
        self.calls(node, keys, text, where)
        check_spark_calls(self, node, keys, text, cols, where)
        if p.expr is not None and ("cast" in text.lower() or "::" in text):
            check_casts(self, node, keys, text, p.expr, cols, where)
        if p.expr is not None and cols is not None and _OPERATOR.search(text):
            check_operators(self, node, keys, text, p.expr, cols, where)
        if self.g.functions and p.expr is not None:
            from etl.graph.functions import check_calls

            check_calls(self, node, keys, text, p.expr, cols, where)
        return p

    def calls(self, node: Node, keys: tuple, text: str, where: str) -> None:
        """E012 for each call of a function that is neither Spark's nor one of the pipeline's `functions`."""
        from etl.graph.fields import unknown_calls
        known = spark_functions()
        mine = self.g.functions
        declared = {f.name.lower() for f in getattr(self.g.pipeline, "functions", None) or () if f is not None}
        if "(" not in text:
            return
        for name, off in unknown_calls(text, lambda n: n.lower() in known or n.lower() in mine
                                       or n.lower() in declared):
            hint = did_you_mean(name.lower(), sorted(known | set(mine))) or \
                "a Spark SQL built-in function, or one of the pipeline's `functions`"
            self.report.error("E012", f"unknown SQL function '{name}' in {where}",
                              self.inner(node, keys, text, off), hint)

    def rule_value(self, cols: Cols, found: str, pred: Any, span_of: Any, where: str) -> None:
        """E102 for a rule value its field's type cannot take (`ge: five-hundred` on an int column: the comparison
        would never match)."""
        from etl.graph.fields import value_problem

        if pred.op not in ("eq", "ne", "in", "gt", "ge", "lt", "le"):
            return
        typ = cols[found]
        parts = pred.field.split(".")
        if len(parts) > 1 and _find(cols, pred.field) is None:  # a nested field: its own declared type
            typ = _nested_type(typ, parts[1:]) or "unknown"
        values = list(enumerate(pred.value)) if pred.op == "in" else [(None, pred.value)]
        for k, value in values:
            why = value_problem(value, typ)
            if why is None:
                continue
            key = "in" if pred.op == "in" else pred.op
            self.report.error("E102", f"value {short_repr(value)} of {where} {why}: field '{pred.field}' is "
                              f"{typ.lower()}", span_of(key) if k is None else span_of(key, k),
                              f"compare {pred.field} with a {typ.lower()} value"
                              + (" (a number, not text)" if why == "is not a number" else ""))

    def aggregate_function(self, node: Node, keys: tuple, name: str) -> Any:
        """The pipeline's aggregate function a window aggregate names (None: a built-in, or reported)."""
        from etl.graph.functions import aggregate_function

        return aggregate_function(self, node, keys, name)

    def aggregate_input(self, node: Node, i: int, fn: str, typ: str) -> None:
        """E102 for aggregate `i` of a window or a continuous aggregate over a column of a type the Spark function
        behind it refuses (sum over an array: try_sum's DATATYPE_MISMATCH at run)."""
        from etl.graph.calls import AGGREGATES_IN_SPARK
        from etl.sql.catalog import lookup

        spark = lookup(AGGREGATES_IN_SPARK.get(fn, ""))
        if spark is not None and typ != "unknown" and spark.refuses(0, typ):
            self.report.error("E102", f"aggregate {fn} of {node.kind} '{node.id}' reads a column of {typ}: Spark's "
                              f"{spark.name} takes {spark.taken_text(0)}", self.span(node, "aggregates", i, "field"),
                              f"{fn} a number column (text is cast to a number), or use another aggregate of this "
                              "one (count, collect_list, max, ...)")

    def check_types(self, node: Node, schema: dict[str, str] | None) -> None:
        """Declared column types must be Spark SQL types (E102 on the bad token, with did-you-mean)."""
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
        """An output column may not take a name etl uses for its own columns (`_etl_...`, the flags), nor one with a
        dot: E102."""
        if isinstance(name, str) and name.lower().startswith(INTERNAL_PREFIX):
            self.report.error("E102", f"column name '{name}' of {node.kind} '{node.id}' is reserved: names starting "
                              f"with '{INTERNAL_PREFIX}' are etl's internal columns", span, "choose another name")
        elif isinstance(name, str) and name.lower() in FLAG_COLUMNS:
            self.report.error("E102", f"column name '{name}' of {node.kind} '{node.id}' is reserved: "
                              f"{', '.join(FLAG_COLUMNS)} are the flag columns etl adds to the rows of windows and "
                              "updates", span, "choose another name")
        elif isinstance(name, str) and ("." in name or "`" in name):
            self.report.error("E102", f"column name '{name}' of {node.kind} '{node.id}' has a "
                              f"{'dot' if '.' in name else 'backtick'}: Spark reads `a.b` as field b of column a",
                              span, "name it without dots (user_name), or declare the nesting: "
                              "user: \"struct<name: string>\"")

    def where(self, node: Node, field: str) -> str:
        return f"{node.kind} '{node.id}' ({field})"

    def event_time_field(self, node: Node, keys: tuple, name: str, cols: Cols | None) -> None:
        found = self.need(cols, name, self.span(node, *keys), self.where(node, ".".join(map(str, keys))))
        if found is not None and cols is not None:
            typ = cols[found].lower()
            if typ not in _TIME_TYPES and typ != "unknown":
                self.report.error("E322", f"event time column '{found}' of {node.kind} '{node.id}' is {typ}, "
                                  "not a timestamp", self.span(node, *keys),
                                  "declare it as timestamp in the schema, or derive one: to_timestamp(col)")

    def inferred_columns(self, node: Node) -> Cols | None:
        """The columns of a jsonl/csv file source without `schema`, inferred from a sample of its files as Spark
        infers them (etl.load.infer), kept in `graph.inferred` for explain and run; None, with W313 at its `path`
        saying which checks are skipped, when no sample gives columns etl can check."""
        from etl.load.infer import infer_columns

        spec = node.spec
        sample = infer_columns(spec.path, self.g.base_dir, spec.format, spec.header, spec.delimiter)
        why = sample.skipped or ("the sample has no rows" if not sample.columns else _unchecked(sample.columns))
        if why:
            self.report.warning("W313", f"columns of file source '{node.id}' not inferred: {why}; the column checks "
                                "of the components it feeds are skipped", self.span(node, "path"),
                                "declare `schema: {column: type}` to have them checked (etl run infers the columns "
                                "when it starts)")
            return None
        self.g.inferred[node.id] = sample
        return dict(sample.columns or {})

    # ------------------------------------------------------------------ what a component's hook may use
    @property
    def graph(self) -> Graph:
        return self.g

    @staticmethod
    def first(ins: list) -> Cols | None:
        """The columns of the only input (a copy), or None when unknown or not exactly one input."""
        if len(ins) != 1:
            return None
        return None if ins[0][1] is None else dict(ins[0][1])

    @staticmethod
    def find(cols: Cols, name: str) -> str | None:
        """The column of `cols` named `name` (case-insensitively), or None."""
        return _find(cols, name)

    def guess_type(self, text: str, cols: Cols | None) -> str:
        """The Spark type of a Spark SQL expression over `cols` ("unknown" when it cannot tell)."""
        from etl.graph.sql import guess_type

        return guess_type(text, cols, self._function_types())

    def _function_types(self) -> dict[str, str]:
        from etl.graph.functions import value_type

        return {k: value_type(s) for k, s in self.g.functions.items() if s.kind != "aggregate"}

    def generated_types(self, p: Any, cols: Cols | None) -> list[str]:
        """The column types of a generator field `inline(rows) AS (a, b)`."""
        from etl.graph.sql import generated_types

        return generated_types(p, cols, self._function_types())

    def columns_of(self, ref: str) -> Cols | None:
        """The columns of another node (or route output) by reference."""
        return _dict(self.g.columns_of(ref))

    def _width(self, node: Node, cols: Cols | None, ins: list) -> None:
        """At most ETL_MAX_COLUMNS columns: E102 at the component whose output first goes past it (its schema)."""
        cap = current().max_columns
        if cols is None or len(cols) <= cap or any(c is not None and len(c) > cap for _, c in ins):
            return
        has = self.smap is not None and self.smap.has(node.path + ("schema",))
        self.report.error("E102", f"{node.kind} '{node.id}' has {len(cols):,} columns, more than etl takes "
                          f"(ETL_MAX_COLUMNS={cap:,}: Spark plans every column of every row)",
                          self.key_span(node, "schema") if has else node.span,
                          "read fewer columns (a text or json column parsed later, in parts), or raise ETL_MAX_COLUMNS")

    # ------------------------------------------------------------------ walk
    def run(self) -> dict[str, Columns | None]:
        """Each node's columns from its spec's `output_columns` hook (etl.spec.base.Component), in order."""
        out = self.g.columns
        for node in self.g.nodes.values():
            if is_placeholder(node.spec):
                out[node.id] = None
                for lab in node.outputs:
                    out[f"{node.id}.{lab}"] = None
                continue
            ins = [(e, _dict(self.g.columns_of(e.ref))) for e in node.inputs if e.role == "input"]
            cols = node.spec.output_columns(self, node, ins)
            self._width(node, cols, ins)
            out[node.id] = _tuple(cols)
            for lab in node.outputs:
                out[f"{node.id}.{lab}"] = _tuple(cols)
        return out


def _unchecked(cols: Cols) -> str:
    """Why etl cannot check inferred columns (a name with a dot or backtick, one of its own, two names differing
    only in case: Spark's reference is ambiguous), or ''."""
    seen: dict[str, str] = {}
    for name in cols:
        if "." in name or "`" in name:
            return f"column {name!r} has a {'dot' if '.' in name else 'backtick'}"
        if name.lower().startswith(INTERNAL_PREFIX) or name.lower() in FLAG_COLUMNS:
            return f"column {name!r} is named like etl's own columns"
        if name.lower() in seen:
            return f"columns {seen[name.lower()]!r} and {name!r} differ only in case"
        seen[name.lower()] = name
    return ""


def _nested_type(typ: str, parts: list[str]) -> str | None:
    """The declared type of the field `parts` inside a struct type (None: not known)."""
    for part in parts:
        fields = struct_fields(typ)
        found = _find(fields, part) if fields else None
        if found is None or fields is None:
            return None
        typ = fields[found]
    return typ


def propagate_columns(graph: Graph, report: Report) -> dict[str, Columns | None]:
    """Fill `graph.columns` for every node (and route label) and check every column reference."""
    return ColumnPass(graph, report).run()


def names(cols: Iterable[tuple[str, str]] | None) -> list[str]:
    return [n for n, _ in cols or ()]
