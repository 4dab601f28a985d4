"""Calls of Spark's built-in functions in an expression, checked against Spark's catalogue (etl.sql.catalog, whose
`spark_calls` finds them on the expression's tokens). `check_spark_calls` reports, for a function Spark has:

* E012 a number of arguments Spark does not take (`substring(s, 1, 2, 3)`: WRONG_NUM_ARGS at run),
* E102 an argument of a type Spark's analysis refuses (`upper(tags)` on an array: DATATYPE_MISMATCH at run), and
  text Spark casts to a number, a date or a timestamp that does not cast (`date_add(ts, 'x')`: under ANSI the cast
  fails the query),

with the argument types told by etl.graph.sql.guess_type; an unknown type is never an error.
"""

from __future__ import annotations

import re
from typing import Any

from etl.sql.catalog import CLASS_NAMES, lookup, spark_calls

_LAMBDA = re.compile(r"(\(\s*\w+(?:\s*,\s*\w+)*\s*\)|\w+)\s*->")  # a lambda's variables: x -> ..., (k, v) -> ...

# the Spark function each of etl's aggregates (etl.spec.aggregates) whose input types Spark checks runs as
AGGREGATES_IN_SPARK = {"sum": "try_sum", "avg": "try_avg"}


def check_spark_calls(cx: Any, node: Any, keys: tuple, text: str, cols: dict | None, where: str) -> int:
    """Report the calls of Spark functions in `text` that Spark refuses; the number of wrong numbers of arguments
    (the only check without `cols`: on an expression sqlglot cannot parse, it says what is wrong more precisely)."""
    from etl.graph.fields import value_problem
    from etl.graph.sql import parse

    mine = cx.graph.functions
    wrong = 0
    bound = {n.lower() for group in _LAMBDA.findall(text) for n in re.findall(r"\w+", group)} if "->" in text else set()
    for call in spark_calls(text):
        fn = lookup(call.name)
        if fn is None or call.syntax or call.name.lower() in mine:
            continue
        n = len(call.args)
        if not fn.takes(n):
            cx.report.error("E012", f"{fn.name} takes {fn.arity_text()}, got {n} in {where}",
                            cx.inner(node, keys, text, call.offset),
                            f"Spark refuses the call (WRONG_NUM_ARGS); see DESCRIBE FUNCTION {fn.name}")
            wrong += 1
            continue
        if cols is None:
            continue
        for i, (arg, off) in enumerate(call.args):
            if not fn.told(i, n):
                break  # another overload than the one the catalogue probed
            if bound and any(c.lower() in bound for c, _ in parse(arg).columns):
                continue  # a lambda's variable (x -> upper(x)), not the column of that name
            typ = cx.guess_type(arg, cols)
            if typ == "unknown":
                continue
            if fn.refuses(i, typ):
                cx.report.error("E102", f"argument {i + 1} of {fn.name} is {typ}: Spark takes {fn.taken_text(i)} "
                                f"there ({where})", cx.inner(node, keys, text, off),
                                f"convert it, e.g. CAST(... AS {_first_taken(fn, i)})")
                continue
            target = fn.cast_of_text(i)
            literal = _string_literal(arg)
            if target is not None and literal is not None:
                why = value_problem(literal, target)
                if why is not None:
                    cx.report.error("E102", f"argument {i + 1} of {fn.name}, {arg}, {why}: Spark casts it to "
                                    f"{target} and fails the query on it (ANSI mode) ({where})",
                                    cx.inner(node, keys, text, off), f"write a value Spark can cast to {target}")
    return wrong


def _first_taken(fn: Any, i: int) -> str:
    cell, _, cast = fn.position(i).partition("=")
    if cast:
        return cast
    return "string" if "s" in cell else next((CLASS_NAMES[c] for c in cell if c in CLASS_NAMES), "string")


def _string_literal(arg: str) -> str | None:
    """The value of a single-quoted text literal without escapes (None: anything else)."""
    if len(arg) >= 2 and arg[0] == arg[-1] == "'" and "'" not in arg[1:-1] and "\\" not in arg:
        return arg[1:-1]
    return None
