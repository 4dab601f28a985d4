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

from etl.sql.casts import parse_kind, targets, verdict
from etl.sql.catalog import CLASS_NAMES, lookup, spark_calls
from etl.sql.operators import (COMPARISON_CLASSES, FUNCTIONS as OPERATOR_FUNCTIONS, OPERATOR_CLASSES, REFUSED, result,
                               taken_beside)

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
        types: dict[int, str] = {}  # argument -> the type guessed for it (once: the check of one type reads them too)
        for i, (arg, off) in enumerate(call.args):
            if not fn.told(i, n):
                break  # another overload than the one the catalogue probed
            if bound and any(c.lower() in bound for c, _ in parse(arg).columns):
                types[i] = "unknown"
                continue  # a lambda's variable (x -> upper(x)), not the column of that name
            typ = types[i] = cx.guess_type(arg, cols)
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
        _check_common_type(cx, node, keys, text, cols, where, fn.name.lower(), call.args, types)
        if fn.name in OPERATOR_FUNCTIONS and n == 2 and "unknown" not in (types.get(0, "unknown"),
                                                                          types.get(1, "unknown")):
            _check_pair(cx, node, keys, text, where, fn.name, types[0], types[1], call.offset)
    return wrong


def check_operators(cx: Any, node: Any, keys: tuple, text: str, tree: Any, cols: dict | None, where: str) -> None:
    """E102 at each arithmetic operator or comparison of `text` (parsed: `tree`) whose two arguments' types Spark's
    analysis refuses together (etl.sql.operators: `d + d` of dates, `ts * 2`, `tags || 'x'`, `dt = 1`, a value of an
    IN list, a bound of BETWEEN: DATATYPE_MISMATCH at run)."""
    from sqlglot import exp

    from etl.graph.sql import node_type

    if isinstance(tree, exp.Expression) and tree.find(exp.Reduce) is not None:
        _check_merges(cx, node, keys, text, tree, cols, where)
    ops = [n for n in tree.dfs() if type(n).__name__ in _CHECKED]
    if not ops:
        return
    fns = cx._function_types()
    at = _operator_offsets(text, tree)
    for n in ops:
        if n.find_ancestor(exp.Lambda) is not None:
            continue  # x -> x + 1: a lambda's variable may take a column's name (validate does not type it here)
        kind = type(n).__name__
        if isinstance(n, exp.In):
            others = list(n.expressions)  # (IN (subquery): no values here)
        elif isinstance(n, exp.Between):
            others = [n.args.get("low"), n.args.get("high")]
        elif isinstance(n.this, exp.Interval) and isinstance(n.expression, exp.Interval):
            continue  # INTERVAL 1 MONTH 2 DAYS: one literal (sqlglot's sum of its units)
        else:
            others = [n.expression]
        a = node_type(n.this, cols, fns)
        for other in others:
            b = node_type(other, cols, fns) if other is not None else "unknown"
            if "unknown" not in (a, b) and _check_pair(cx, node, keys, text, where, _CHECKED[kind], a, b,
                                                      at.get(id(n), 0), _SHOWN.get(kind)):
                break


def _check_merges(cx: Any, node: Any, keys: tuple, text: str, tree: Any, cols: dict | None, where: str) -> None:
    """E102 at each aggregate / reduce whose merge does not keep its start's type (Spark's DATATYPE_MISMATCH)."""
    from sqlglot import exp

    from etl.graph.containers import merge_type
    from etl.graph.sql import node_type

    fns = cx._function_types()
    calls = [c for c in spark_calls(text) if c.name.lower() in ("aggregate", "reduce")]
    reduces = [n for n in tree.dfs() if isinstance(n, exp.Reduce)]
    for i, n in enumerate(reduces):
        if n.find_ancestor(exp.Lambda) is not None:
            continue
        told = merge_type(n, cols or {}, lambda e, c: node_type(e, c, fns))
        if told is None or told[0] == told[1]:
            continue
        off = calls[i].offset if len(calls) == len(reduces) else 0
        cx.report.error("E102", f"the merge of aggregate gives {told[1]}, its start is {told[0]}: Spark refuses a "
                        f"merge of another type than the start's (DATATYPE_MISMATCH at run) ({where})",
                        cx.inner(node, keys, text, off), f"start with a value of the merge's type, e.g. "
                        f"CAST(0 AS {told[1]})")


def _check_pair(cx: Any, node: Any, keys: tuple, text: str, where: str, op: str, a: str, b: str, off: int,
                shown: str | None = None) -> bool:
    """E102 when Spark refuses `a op b` (True: reported); `shown`: the operator as written, when `op` names its
    table (> reads <'s)."""
    if result(op, a, b) != REFUSED:
        return False
    word = shown or op
    what = f"{op}({a}, {b})" if op.startswith("try_") else f"{a} IN (..., {b})" if word == "IN" else f"{a} {word} {b}"
    takes = taken_beside(op, a, left=True)
    hint = f"Spark's {word} takes beside {a} on its left: {', '.join(takes)}" if takes else \
        f"Spark's {word} takes no {a} on its left"
    cx.report.error("E102", f"{what} is refused by Spark (DATATYPE_MISMATCH at run) ({where})",
                    cx.inner(node, keys, text, off), hint + "; cast an argument, e.g. CAST(... AS ...)")
    return True


_INFIX = {k for k, v in OPERATOR_CLASSES.items() if not v.startswith("try_")} | set(COMPARISON_CLASSES)
_CHECKED = {**{k: OPERATOR_CLASSES[k] for k in _INFIX if k in OPERATOR_CLASSES}, **COMPARISON_CLASSES}
_SHOWN = {"NEQ": "!=", "NullSafeEQ": "<=>", "NullSafeNEQ": "IS DISTINCT FROM", "GT": ">", "GTE": ">=", "LTE": "<=",
          "In": "IN", "Between": "BETWEEN"}
_TOKENS = frozenset({"PLUS", "DASH", "STAR", "SLASH", "MOD", "DIV", "DPIPE", "EQ", "NEQ", "NULLSAFE_EQ", "GT", "GTE",
                     "LT", "LTE", "IN", "BETWEEN", "IS"})


def _operator_offsets(text: str, tree: Any) -> dict[int, int]:
    """id(operator node) -> the 0-based offset of its token in `text`: the tree read in order (an operator between
    its arguments, a negation or a `*` where it stands) meets the operator tokens in the text's order; {} when they
    do not pair up (never seen: the whole expression then)."""
    from sqlglot import exp
    from sqlglot.dialects.spark import Spark

    toks = [t.start for t in Spark().tokenize(text) if t.token_type.name in _TOKENS]
    order: list[Any] = []
    stack: list[tuple[Any, bool]] = [(tree, False)]
    while stack:
        n, seen = stack.pop()
        if seen:
            order.append(n)
            continue
        kids = list(n.iter_expressions())
        if type(n).__name__ in _INFIX and len(kids) >= 2 or isinstance(n, exp.Is):
            stack.extend([*((k, False) for k in reversed(kids[1:])), (n, True), (kids[0], False)])
            continue
        if isinstance(n, (exp.Neg, exp.Star)):
            order.append(n)
        stack.extend((c, False) for c in reversed(kids))
    if len(order) != len(toks):
        return {}
    return {id(n): off for n, off in zip(order, toks, strict=True)}


# functions whose arguments at these positions (None: all) Spark brings to one type: the type of etl.sql.operators'
# coalesce table (greatest's for greatest and least: no text beside another type there), probed in pyspark 4.3,
# ANSI on; tests/spark/test_spark_casts.py asks Spark each pair of 7 column types
SAME_TYPE: dict[str, tuple[int, ...] | None] = {"coalesce": None, "nvl": None, "ifnull": None, "nullif": None,
                                                "nvl2": (1, 2), "if": (1, 2), "greatest": None, "least": None}


def refused_together(fn: str, a: str, b: str) -> bool:
    """Does Spark refuse SAME_TYPE's function `fn` over values of types `a` and `b` (DATA_DIFF_TYPES)?"""
    return result("greatest" if fn in ("greatest", "least") else "coalesce", a, b) == REFUSED


def _check_common_type(cx: Any, node: Any, keys: tuple, text: str, cols: dict, where: str, fn: str,
                       args: tuple[tuple[str, int], ...], types: dict[int, str]) -> None:
    """E102 at the first argument whose type shares none with the one type of the arguments before it
    (`coalesce(bytes, 0)`: Spark's DATATYPE_MISMATCH.DATA_DIFF_TYPES at run)."""
    if fn not in SAME_TYPE:
        return
    positions = SAME_TYPE[fn]
    seen: str | None = None
    for i, (arg, off) in enumerate(args):
        if positions is not None and i not in positions:
            continue
        typ = types[i] if i in types else cx.guess_type(arg, cols)
        if typ == "unknown":
            continue
        if seen is not None and refused_together(fn, seen, typ):
            cx.report.error("E102", f"argument {i + 1} of {fn} is {typ}, which shares no type with {seen} before it: "
                            f"Spark refuses the call (DATATYPE_MISMATCH.DATA_DIFF_TYPES) ({where})",
                            cx.inner(node, keys, text, off), f"cast the arguments to one type, e.g. CAST(... AS {seen})")
            return
        wider = result("greatest" if fn in ("greatest", "least") else "coalesce", seen, typ) if seen else typ
        if wider is None:
            return  # a type the tables do not tell: no later clash can be told
        seen = wider


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


def check_casts(cx: Any, node: Any, keys: tuple, text: str, tree: Any, cols: dict | None, where: str) -> None:
    """E102 at each CAST / TRY_CAST / `::` of `text` (parsed: `tree`) whose types Spark's analysis refuses
    (etl.sql.casts: `CAST(s AS array<int>)` of a string, a map to int: DATATYPE_MISMATCH at run)."""
    from sqlglot import exp

    from etl.graph.sql import node_type
    casts = [n for n in tree.dfs() if isinstance(n, exp.Cast)]
    if not casts:
        return
    fns = cx._function_types()
    at = _cast_offsets(text, tree, casts)
    for n, off in zip(casts, at, strict=True):
        src = node_type(n.this, cols, fns)
        dst = n.to.sql(dialect="spark").lower()
        try_ = bool(n.args.get("safe"))
        if src == "unknown" or verdict(src, dst, try_) is not False:
            continue
        word = "TRY_CAST" if try_ else "CAST"
        takes = ", ".join(targets(src, try_)) or "string"
        hint = f"Spark's {word} turns {_kind_word(src)} into {takes} only"
        kind = _kind_word(src)
        if kind in _INTO and dst.startswith(kind):
            hint = f"Spark casts {_INTO[kind]}"
        elif src in ("string", "binary") and dst.startswith(("array", "map", "struct")):
            hint += f"; to read text as {dst}, use from_json(..., '{dst}')"
        cx.report.error("E102", f"{word} of {src} to {dst} is a cast Spark refuses (DATATYPE_MISMATCH at run) "
                        f"({where})", cx.inner(node, keys, text, off), hint)




_INTO = {"array": "an array to an array whose elements cast", "map": "a map to a map whose keys and values cast (a "
         "key may not turn NULL)", "struct": "a struct to a struct of as many fields, each field to the one in its "
         "place"}


def _kind_word(typ: str) -> str:
    k = parse_kind(typ)
    return k[0] if k is not None else typ


def _cast_offsets(text: str, tree: Any, casts: list) -> list[int]:
    """The 0-based offset in `text` of each cast (in `casts`' pre-order): the value `CAST(` / `TRY_CAST(` casts
    (as E102 of a call's argument: in a SQL script, a column's name is where it was written), or the `::` of
    `x::type` (the `::` tokens are in the post-order of their casts: `a::int::string` is the inner one's first)."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    toks = Spark().tokenize(text)
    words = [toks[i + 2].start for i, t in enumerate(toks[:-2]) if t.text.upper() in ("CAST", "TRY_CAST")
             and toks[i + 1].token_type == TokenType.L_PAREN]
    colons = [t.start for t in toks if t.token_type == TokenType.DCOLON]
    keyword = [n for n in casts if "format" in n.args]  # sqlglot's CAST(...) parse sets format/safe; `::` does not
    if len(keyword) != len(words) or len(casts) - len(keyword) != len(colons):
        return [0] * len(casts)  # never seen: the whole expression
    out = dict(zip(map(id, keyword), words, strict=True))
    ordered: list = []
    _post_order(tree, [n for n in casts if "format" not in n.args], ordered)
    out.update(zip(map(id, ordered), colons, strict=True))
    return [out[id(n)] for n in casts]


def _post_order(tree: Any, wanted: list, out: list) -> None:
    ids = {id(n) for n in wanted}
    stack = [(tree, False)]
    while stack:
        n, done = stack.pop()
        if done:
            if id(n) in ids:
                out.append(n)
            continue
        stack.append((n, True))
        stack.extend((c, False) for c in reversed(list(n.iter_expressions())))
