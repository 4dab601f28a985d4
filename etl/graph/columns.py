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

from typing import Any, Iterable

from etl.diagnostics import Report, Span, did_you_mean, short_repr
from etl.graph.names import find as _find
from etl.graph.names import suggest as _suggest
from etl.graph.model import Columns, Graph, Node, is_placeholder

Cols = dict[str, str]  # name -> spark type, in order
INTERNAL_PREFIX = "_etl_"  # etl's own columns (dead-letter reasons, payloads, join keys, ...): see etl/compile
# the boolean columns windows (emit early / late update: etl.spec.transforms.Emit.flag_columns), continuous
# aggregates and top_n (etl.spec.continuous) add to their rows: a user column of that name was ambiguous at run
FLAG_COLUMNS = ("_final", "_retract", "_update")

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
        """Parse a Spark SQL expression; report E311 on a parse error, E310 per unknown column, E352/E353 per bad
        call of a pipeline function."""
        from etl.graph.sql import parse

        if not isinstance(text, str):
            return None
        p = parse(text)
        if p.error is not None:
            off = p.error.col - 1 + (len(text) - len(text.lstrip()) if p.error.line == 1 else 0)
            self.report.error("E311", f"{'' if p.error.hint else 'cannot parse '}Spark SQL in {where}: {p.error.message}",
                              self.inner(node, keys, text, off, p.error.line), p.error.hint
                              or "write a Spark SQL expression, e.g. \"status >= 500 AND host LIKE 'web%'\"")
            return None
        if cols is not None:
            for name, off in p.columns:
                if _find(cols, name) is None:
                    self._unknown(name, cols, self.inner(node, keys, text, off), where)
        if self.g.functions and p.expr is not None:
            from etl.graph.functions import check_calls

            check_calls(self, node, keys, text, p.expr, cols, where)
        return p

    def aggregate_function(self, node: Node, keys: tuple, name: str) -> Any:
        """The pipeline's aggregate function a window aggregate names (None: a built-in, or reported)."""
        from etl.graph.functions import aggregate_function

        return aggregate_function(self, node, keys, name)

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
        """An output column may not take a name etl uses for its own columns (`_etl_...`, the flags): E102."""
        if isinstance(name, str) and name.lower().startswith(INTERNAL_PREFIX):
            self.report.error("E102", f"column name '{name}' of {node.kind} '{node.id}' is reserved: names starting "
                              f"with '{INTERNAL_PREFIX}' are etl's internal columns", span, "choose another name")
        elif isinstance(name, str) and name.lower() in FLAG_COLUMNS:
            self.report.error("E102", f"column name '{name}' of {node.kind} '{node.id}' is reserved: "
                              f"{', '.join(FLAG_COLUMNS)} are the flag columns etl adds to the rows of windows and "
                              "updates", span, "choose another name")

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
        from etl.settings import current

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


def propagate_columns(graph: Graph, report: Report) -> dict[str, Columns | None]:
    """Fill `graph.columns` for every node (and route label) and check every column reference."""
    return ColumnPass(graph, report).run()


def names(cols: Iterable[tuple[str, str]] | None) -> list[str]:
    return [n for n, _ in cols or ()]
