"""The pipeline's Python functions: signatures read from their modules, checks of every call.

`resolve_functions` reads each `functions:` entry's signature (etl.spec.signature: the pipeline's
declaration, a decorator, or annotations; nothing is imported) into `graph.functions`, reporting

* E350 a module or callable that cannot be found (or does not parse),
* E351 a signature that cannot be told (which sources were read, and where),
* E102 an invalid result or argument type, a name declared twice or shadowing a Spark built-in.

`check_calls` (from the column pass, per expression) reports E352 for a call with the wrong number
of arguments or an argument of a declared type it cannot take, and E353 for a function used as
the wrong kind (an aggregate or table function in a plain expression).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from etl.diagnostics import Report, Span, did_you_mean
from etl.graph.types import parse_type
from etl.load.paths import module_reader
from etl.spec.aggregates import NAMES
from etl.spec.signature import Signature, SignatureError, read_signature, split_columns
from etl.sql.functions import spark_functions

_NUMERIC = frozenset({"tinyint", "smallint", "int", "bigint", "float", "double"})
_FAMILY = {**{t: "number" for t in _NUMERIC}, "string": "string", "boolean": "boolean", "timestamp": "timestamp",
           "date": "date", "binary": "binary"}


def resolve_functions(pipeline: Any, smap: Any, base_dir: str, report: Report) -> dict[str, Signature]:
    out: dict[str, Signature] = {}
    for i, spec in enumerate(getattr(pipeline, "functions", None) or ()):
        if spec is None:  # an entry that does not validate (reported)
            continue
        path = ("functions", i)

        def at(*keys: Any, path: tuple = path) -> Span:
            return smap.value(path + keys) if smap is not None else Span("<pipeline>")

        key = spec.name.lower()
        if key in out:
            report.error("E102", f"function '{spec.name}' is declared twice", at("name"), "give each function its "
                         "own name")
            continue
        if key in spark_functions():
            report.error("E102", f"function name '{spec.name}' is a Spark SQL built-in function", at("name"),
                         "choose another name (a Python function may not replace a built-in)")
            continue
        try:
            sig = read_signature(spec, base_dir, module_reader(base_dir))
        except SignatureError as e:
            report.error(e.code, e.message, at("callable"), e.hint)
            continue
        if sig.kind != "aggregate":
            gap = next((i for i, t in enumerate(sig.args) if t is None), None)
            if sig.max_args is None or gap is not None:
                what = "takes *args" if gap is None else f"argument {gap + 1} has no type"
                report.error("E351", f"function '{spec.name}' ({sig.source}): {what}", at("callable"),
                             "annotate each parameter (s: str) or declare `args: [string, ...]`")
                continue
            sig = replace(sig, min_args=sig.max_args)  # called through a SQL function: every argument given
        types = [("returns", t) for _, t in split_columns(sig.returns)] if sig.kind == "table" \
            else [("returns", sig.returns)]
        types += [("args", t) for t in sig.args if t is not None]
        if sig.kind == "table" and not split_columns(sig.returns):
            report.error("E102", f"table function '{spec.name}' returns no columns", at("returns"),
                         "name its columns: 'word string, pos int'")
            continue
        bad = next(((k, t, err) for k, t in types if (err := parse_type(t)) is not None), None)
        if bad is not None:
            k, t, err = bad
            report.error("E102", f"invalid Spark SQL type '{t}' in function '{spec.name}' ({sig.source}): "
                         f"{err.message}", at(k) if getattr(spec, k) is not None else at("callable"),
                         "Spark SQL types: string, int, bigint, double, boolean, timestamp, array<...>, ...")
            continue
        out[key] = sig
    return out


def _family(t: str | None) -> str | None:
    if not t:
        return None
    t = t.lower()
    return _FAMILY.get(t) or ("decimal" if t.startswith("decimal") else None) or \
        ("array" if t.startswith("array") else "map" if t.startswith("map") else None)


def check_calls(cx: Any, node: Any, keys: tuple, text: str, tree: Any, cols: dict | None, where: str,
                aggregates: bool = False) -> None:
    """E352/E353 for the calls of the pipeline's functions in one parsed expression."""
    from sqlglot import exp

    from etl.graph.sql import guess_type

    fns: dict[str, Signature] = cx.graph.functions
    if not fns or tree is None:
        return
    for call in tree.find_all(exp.Anonymous):
        sig = fns.get(str(call.this).lower())
        if sig is None:
            continue
        off = text.lower().find(str(call.this).lower())
        span = cx.inner(node, keys, text, max(off, 0))
        if sig.kind == "aggregate" and not aggregates:
            cx.report.error("E353", f"aggregate function '{sig.name}' called in {where} as a scalar function",
                            span, f"use it in a window's `aggregates` (fn: {sig.name})")
            continue
        n = len(call.expressions)
        if n < sig.min_args or (sig.max_args is not None and n > sig.max_args):
            cx.report.error("E352", f"function '{sig.name}' takes {sig.arity()} argument"
                            f"{'' if sig.arity() == '1' else 's'}, {n} given in {where}", span,
                            f"{sig.describe()} ({sig.source})")
            continue
        for i, (arg, want) in enumerate(zip(call.expressions, sig.args, strict=False)):
            got = guess_type(arg.sql(dialect="spark"), cols) if cols is not None else "unknown"
            fw, fg = _family(want), _family(got)
            if fw and fg and fw != fg:
                cx.report.error("E352", f"argument {i + 1} of function '{sig.name}' is {got}, it takes {want} "
                                f"({where})", span, f"cast it: CAST(... AS {want}) ({sig.describe()}, "
                                f"{sig.source})")


def aggregate_function(cx: Any, node: Any, keys: tuple, name: str) -> Signature | None:
    """The pipeline's aggregate function `name` of a window's or a continuous aggregate's aggregates, or an error
    (E353 / E102)."""
    if name in NAMES:
        return None
    sig = cx.graph.functions.get(name.lower())
    if sig is not None and sig.kind == "aggregate":
        return sig
    span = cx.span(node, *keys)
    if sig is not None:
        what = "a window aggregate" if node.type == "window" else f"an aggregate of {node.type} '{node.id}'"
        cx.report.error("E353", f"{sig.kind} function '{sig.name}' used as {what}", span,
                        "an aggregate function takes a pandas Series (kind: aggregate)")
        return None
    aggs = [s.name for s in cx.graph.functions.values() if s.kind == "aggregate"]
    declared = [f.name.lower() for f in getattr(cx.graph.pipeline, "functions", None) or () if f is not None]
    if name.lower() in declared:
        return None  # declared, but its entry has an error (reported)
    cx.report.error("E102", f"unknown aggregate function '{name}' in {node.type} '{node.id}'", span,
                    did_you_mean(name, list(NAMES) + aggs) or "built-ins: " + ", ".join(NAMES))
    return None


def value_type(sig: Signature) -> str:
    """The type of a call's value: a table function's is the array of its rows (a select explodes it)."""
    if sig.kind == "table":
        return "array<struct<" + ",".join(f"{n}:{t}" for n, t in sig.columns) + ">>"  # as Spark prints it
    return sig.returns


def explain_lines(fns: dict[str, Signature]) -> list[str]:
    return [f"{s.describe()}  [{s.kind}, {s.ref}; signature: {s.source}]" for s in fns.values()]
