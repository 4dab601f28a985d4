"""Spark's arithmetic over two arguments, as data: the type `a + b`, `d - d`, `tags || tags`, `try_add(a, b)` ...
have, the type Spark brings coalesce's and greatest's arguments to, or that Spark's analysis refuses the pair.

The data is etl/sql/spark_operators.tsv, written by scripts/spark_operators.py from Spark's own answers (one
analysis per operator and pair of types; etl's session: ANSI on). No JVM here: `etl validate` asks `result` for
the type of an expression (etl.graph.sql) and reports E102 at an operator Spark refuses (etl.graph.calls).
What the tables probed with one type of a kind, Spark's rules give for the others: a decimal's precision and
scale (DecimalPrecision: `price * 2` is decimal(13,2) over decimal(10,2), an integer literal counts its digits),
the fields of an interval (`INTERVAL 1 HOUR + INTERVAL 1 DAY` is interval day to hour), an array, a map or a
struct beside the same type. Comparisons (=, <) are tables too: `dt = 1`, `ts < INTERVAL 1 DAY` are refused. A type
the tables do not know is never refused.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from types import MappingProxyType

from etl.sql.casts import parse_kind, read_matrices

FILE = Path(__file__).parent / "spark_operators.tsv"
REFUSED = "-"  # `result` of a pair Spark's analysis refuses
# sqlglot's class of an operator -> the operator's table; the functions of the same tables
OPERATOR_CLASSES = MappingProxyType({"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%", "IntDiv": "div",
                                     "DPipe": "||", "SafeAdd": "try_add", "SafeSubtract": "try_subtract",
                                     "SafeMultiply": "try_multiply", "SafeDivide": "try_divide"})
FUNCTIONS = ("try_add", "try_subtract", "try_multiply", "try_divide", "try_mod")
# comparisons (a boolean, or refused): = for equality, < for order; IN compares each value with the first, BETWEEN
# orders the first between the others
COMPARISON_CLASSES = MappingProxyType({"EQ": "=", "NEQ": "=", "NullSafeEQ": "=", "NullSafeNEQ": "=", "GT": "<",
                                       "GTE": "<", "LT": "<", "LTE": "<", "In": "=", "Between": "<"})
TABLES = tuple(OPERATOR_CLASSES.values()) + ("%", "try_mod", "coalesce", "greatest", "=", "<")
# the single-field intervals parse_kind names, and the probed kind whose row they read
_FAMILY = MappingProxyType({"interval month": "interval year to month", "interval day": "interval day to second"})
_UNITS = MappingProxyType({"year to month": ("year", "month"), "day to second": ("day", "hour", "minute", "second")})
_INTEGRAL_DIGITS = MappingProxyType({"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20})
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_MAX_PRECISION = 38


@functools.cache
def tables() -> dict[str, dict[tuple[str, str], str]]:
    """Per operator: (left kind, right kind) -> cell (a type, `-` refused, `?` not told)."""
    return read_matrices(FILE, TABLES)


def _kind(typ: str) -> str | None:
    k = parse_kind(typ)
    if k is None:
        return None
    return _FAMILY.get(k[0], k[0])


def result(op: str, left: str, right: str, left_digits: int | None = None, right_digits: int | None = None) -> str | None:
    """Spark's type of `left op right` (`op`: +, -, *, /, %, div, ||, a try_ function, coalesce or greatest for the
    type they bring two arguments to, = or < for a comparison); REFUSED when Spark's analysis refuses the pair; None when the tables cannot
    tell (a type they do not know). `*_digits`: the number of digits of an integer literal (a decimal beside it
    takes decimal(digits, 0) for it, not int's decimal(10,0))."""
    a, b = _kind(left), _kind(right)
    if a is None or b is None or op not in tables():
        return None
    cell = tables()[op].get((a, b), "?")
    if cell in (REFUSED, "?"):
        return None if cell == "?" else cell
    lo, ro = left.strip().lower().replace(" ", ""), right.strip().lower().replace(" ", "")
    if op in ("+", "-", "try_add", "try_subtract") and a == "date" and b == "interval day to second" \
            and _fields(b, [right]) == "interval day":
        return "date"  # Spark adds (subtracts) the days: date_add(d, days)
    if cell.startswith("decimal"):
        return _decimal(op, _as_decimal(lo, a, left_digits), _as_decimal(ro, b, right_digits))
    if cell.startswith("interval"):
        return _interval(left, right, a, b, cell)
    if cell.startswith(("array", "map", "struct")):  # beside the same type (or a NULL): that type
        empty = ("array<void>", "map<void,void>")  # array() / map(): beside a container of its kind, that one
        return ro if a == "void" or lo in empty else lo if b == "void" or ro in empty or lo == ro else None
    return cell


def _as_decimal(typ: str, kind: str, digits: int | None) -> tuple[int, int] | None:
    if kind == "decimal":
        m = _DECIMAL.fullmatch(typ)
        return (int(m.group(1)), int(m.group(2))) if m else (10, 0)
    if kind in _INTEGRAL_DIGITS:
        return (digits, 0) if digits is not None else (_INTEGRAL_DIGITS[kind], 0)
    return None  # a NULL: the decimal beside it


def _decimal(op: str, a: tuple[int, int] | None, b: tuple[int, int] | None) -> str | None:
    """Spark's DecimalPrecision (spark.sql.decimalOperations.allowPrecisionLoss on, its default)."""
    x, y = a or b, b or a  # a NULL beside a decimal: that decimal
    if x is None or y is None:
        return None
    (p1, s1), (p2, s2) = x, y
    if op in ("coalesce", "greatest"):  # the wider decimal, bounded
        s = max(s1, s2)
        return f"decimal({min(max(p1 - s1, p2 - s2) + s, _MAX_PRECISION)},{min(s, _MAX_PRECISION)})"
    if op in ("+", "-", "try_add", "try_subtract"):
        s = max(s1, s2)
        p = max(p1 - s1, p2 - s2) + s + 1
    elif op in ("*", "try_multiply"):
        p, s = p1 + p2 + 1, s1 + s2
    elif op in ("/", "try_divide"):
        s = max(6, s1 + p2 + 1)
        p = p1 - s1 + s2 + s
    elif op in ("%", "try_mod"):
        s = max(s1, s2)
        p = min(p1 - s1, p2 - s2) + s
    else:
        return None
    if p > _MAX_PRECISION:  # DecimalType.adjustPrecisionScale: keep the integral digits, at least 6 of scale
        s = max(_MAX_PRECISION - (p - s), min(s, 6))
        p = _MAX_PRECISION
    return f"decimal({p},{s})"


def _interval(left: str, right: str, a: str, b: str, cell: str) -> str:
    """Two intervals of one family (+, -, coalesce): the fields of both; a NULL beside one: its type; else the
    table's answer (interval * 2 is day to second, date - date interval day)."""
    if a == b == cell:
        return _fields(cell, [left, right])
    if "void" in (a, b) and cell in (a, b):
        return _fields(cell, [left if b == "void" else right])
    return cell


def _fields(family: str, types: list[str]) -> str:
    units = _UNITS["year to month" if "month" in family else "day to second"]
    found: list[int] = []
    for t in types:
        words = [w for w in t.strip().lower().split()[1:] if w != "to"]
        idx = [units.index(w) for w in words if w in units]
        found.extend(idx or [0, len(units) - 1])
    lo, hi = min(found), max(found)
    return f"interval {units[lo]}" if lo == hi else f"interval {units[lo]} to {units[hi]}"


def taken_beside(op: str, typ: str, left: bool) -> list[str]:
    """The kinds Spark's `op` takes beside a `typ` on the left (`left`) or the right, for a hint."""
    k = _kind(typ)
    if k is None or op not in tables():
        return []
    pairs = tables()[op]
    return [other for (x, y), c in pairs.items() if c not in (REFUSED, "?") and (x if left else y) == k
            and (other := y if left else x) != "void"]
