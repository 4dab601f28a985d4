"""The function table (functions.tsv: Flink / rsqldb function -> Spark SQL template) and the filling of a template
with a call's arguments; what the SQL front-end's function rewriting (etl.sql.functions), its dialect (etl.sql.dialect)
and DISSECT (etl.sql.dissect) share."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from sqlglot import exp

@dataclass(frozen=True)
class Row:
    name: str
    arity: str  # a number, or "n"
    dialect: str  # "*" or one of DIALECTS
    spark: str  # template, python:<rule>, or "-"
    note: str


class FunctionError(Exception):
    """A call the table refuses (unsupported, wrong arity, an argument that must be a literal)."""

    def __init__(self, message: str, node: exp.Expression, hint: str | None, code: str = "E012"):
        super().__init__(message)
        self.message, self.node, self.hint, self.code = message, node, hint, code


@functools.cache
def table() -> tuple[Row, ...]:
    rows = []
    for line in (Path(__file__).parent / "functions.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, arity, dialect, spark, note = line.split("\t")
            rows.append(Row(name, arity, dialect, spark, note))
    return tuple(rows)


@functools.cache
def names() -> frozenset[str]:
    return frozenset(r.name for r in table())


def row_for(name: str, nargs: int, dialect: str) -> Row | None:
    """The row for a call: the dialect's own row first, then the common one; None: no row of that arity."""
    fits = [r for r in table() if r.name == name and r.arity in (str(nargs), "n")]
    return next((r for r in fits if r.dialect == dialect), None) or next((r for r in fits if r.dialect == "*"), None)


@functools.cache
def _template(text: str) -> exp.Expression:
    import sqlglot

    return cast(exp.Expression, sqlglot.parse_one(text, dialect="spark"))


def fill(template: str, args: list[exp.Expression]) -> exp.Expression:
    def sub(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and not n.table and n.name.startswith("_") and n.name[1:].isdigit():
            return args[int(n.name[1:]) - 1].copy()
        return n

    def regex_ok(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Anonymous) and n.name.lower() == "etl_groups":
            p = n.expressions[0]
            if isinstance(p, exp.Literal) and p.is_string:
                return exp.Literal.number(len(_GROUP.findall(p.this)))
            return spark_call("size", spark_call("regexp_extract_all", p, exp.Literal.string(_GROUP.pattern), exp.Literal.number(0)))
        if isinstance(n, exp.Anonymous) and n.name.lower() == "etl_regex_ok":
            p = n.expressions[0]
            if isinstance(p, exp.Literal) and p.is_string:
                return exp.true()
            return exp.Paren(this=exp.Not(this=exp.Is(this=spark_call(
                "try_reflect", exp.Literal.string("java.util.regex.Pattern"), exp.Literal.string("compile"), p),
                expression=exp.null())))
        return n

    tree = _template(template).copy()
    for call in list(tree.find_all(exp.Func)):  # `_all`: every argument, in its place
        items = call.args.get("expressions")
        if items and any(isinstance(i, exp.Column) and i.name == "_all" for i in items):
            call.set("expressions", [x for i in items for x in
                                     ([a.copy() for a in args] if isinstance(i, exp.Column) and i.name == "_all"
                                      else [i])])
    from sqlglot.optimizer.simplify import simplify

    return fold_constants(simplify(fold_constants(tree.transform(sub).transform(regex_ok))))  # the constants a literal leaves


# a capturing group of a Java regex: `(` not escaped and not `(?`, or a named one `(?<name>` (a `(` inside a
# character class counts too: such a pattern's groups are over-counted)
_GROUP = re.compile(r"(?<!\\)\((?!\?)|(?<!\\)\(\?<[A-Za-z]")


def fold_constants(tree: exp.Expression) -> exp.Expression:
    """What sqlglot's simplify leaves of the constants: NOT TRUE, 'x' IS NULL, a OR FALSE, IF(FALSE, a, b)."""
    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Not) and isinstance(n.this, exp.Boolean):
            return exp.Boolean(this=not n.this.this)
        if isinstance(n, exp.Is) and isinstance(n.this, exp.Literal) and isinstance(n.expression, exp.Null):
            return exp.false()
        if isinstance(n, exp.Or):
            for a, b in ((n.this, n.expression), (n.expression, n.this)):
                if isinstance(a, exp.Boolean):
                    return a if a.this else b
        if isinstance(n, exp.If) and isinstance(n.this, exp.Boolean):
            return n.args["true"] if n.this.this else (n.args.get("false") or exp.null())
        if isinstance(n, exp.Paren) and isinstance(n.this, (exp.Boolean, exp.Column, exp.Literal)):
            return n.this
        return n

    return tree.transform(fix)


def spark_call(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))
