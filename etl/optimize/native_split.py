"""Pass 2: cheap predicates become native predicates, evaluated before any pattern work.

eq, ne, in, gt/ge/lt/le, is_null, not_null (and the internal ``has_text``) get
Spark SQL text with the same meaning (a predicate on null is false, hence the
``coalesce(..., false)``) and are evaluated by the matcher with pyarrow.compute
kernels over whole batches. cidr and caseless string equality have no exact
Spark SQL form; the matcher evaluates them once per distinct value in Python.

The SQL text assumes the column has the literal's type (Spark would cast a
string column compared with a number; the matcher never coerces).
"""

from __future__ import annotations

import math
from types import MappingProxyType

from etl.matching.ir import FilterProgram, NativePredicate, PredicateKey
from etl.spec.rules import NATIVE_OPS

NATIVE = NATIVE_OPS + ("cidr", "has_text")

# characters Python's str.isspace() accepts, as a Java regex class
_WS = "\\t\\n\\x0B\\f\\r\\x1C-\\x1F \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"


def sql_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_literal(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return f"CAST('{v!r}' AS DOUBLE)".replace("inf", "Infinity").replace("nan", "NaN")
        return repr(v) + "D"
    if isinstance(v, str):
        return sql_string(v)
    raise TypeError(f"no SQL literal for {v!r}")


def sql_column(field: str, derivations: tuple[str, ...]) -> str:
    col = ".".join("`" + part.replace("`", "``") + "`" for part in field.split("."))
    for d in derivations:
        if d == "lower":
            col = f"lower({col})"
        elif d == "upper":
            col = f"upper({col})"
        elif d == "trim":
            col = f"regexp_replace({col}, {sql_string(f'^[{_WS}]+|[{_WS}]+$')}, '')"
        elif d == "collapse_ws":
            col = f"regexp_replace({col}, {sql_string(f'[{_WS}]+')}, ' ')"
    return col


_CMP = MappingProxyType({"eq": "=", "ne": "<>", "gt": ">", "ge": ">=", "lt": "<", "le": "<="})


def native_sql(key: PredicateKey) -> str | None:
    """Spark SQL text for a native predicate, or None when it has no exact SQL form."""
    col = sql_column(key.field, key.derivations)
    if key.op == "is_null":
        return f"{col} IS NULL"
    if key.op in ("not_null", "has_text"):
        return f"{col} IS NOT NULL"
    if key.op in ("cidr", "fieldref") or key.caseless:
        return None
    if key.op in _CMP:
        return f"coalesce({col} {_CMP[key.op]} {sql_literal(key.value)}, false)"
    if key.op == "in":
        return f"coalesce({col} IN (" + ", ".join(sql_literal(v) for v in key.value) + "), false)"
    raise ValueError(f"not a native operator: {key.op}")


def native_split(program: FilterProgram) -> FilterProgram:
    natives = []
    for p in program.predicates:
        if p.key.op in NATIVE:
            vectorized = p.key.op not in ("cidr", "fieldref") and not p.key.caseless
            natives.append(NativePredicate(p.index, p.key, native_sql(p.key), vectorized, p.origin))
    return program.with_pass("native_split", natives=tuple(natives))
