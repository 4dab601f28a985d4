"""Spark's cast rules, as data: which casts its analysis takes (CAST and `::`: Cast.canAnsiCast, etl runs with ANSI
on; TRY_CAST: Cast.canTryCast).

The data is etl/sql/spark_casts.tsv, written by scripts/spark_casts.py from Spark's own answers (one analysis per
pair of types, at the top, as an array's element and as a map's key). No JVM here: `etl validate` asks `verdict`
whether a cast in an expression is one Spark refuses (`CAST(s AS array<int>)` of a string: DATATYPE_MISMATCH at
run). Containers of one kind recurse as in Spark: array to array by elements, map to map by keys and values,
struct to struct field by field (as many fields). A type the tables do not know is never refused.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

FILE = Path(__file__).parent / "spark_casts.tsv"
_ALIASES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint", "real": "float",
            "timestamp_ltz": "timestamp", "varchar": "string", "char": "string", "dec": "decimal",
            "numeric": "decimal"}
_CONTAINERS = ("array", "map", "struct")
_NUMBERS = frozenset({"tinyint", "smallint", "int", "bigint", "float", "double", "decimal"})

Kind = tuple[str, tuple["Kind", ...]]  # (the tables' name of a type, the types inside a container)


def read_matrices(path: Path, names: tuple[str, ...]) -> dict[str, dict[tuple[str, str], str]]:
    """A file of probed tables (scripts/spark_casts.py, scripts/spark_operators.py): per table named in `names` (its
    header row: the name, then the columns' types), (row type, column type) -> cell."""
    out: dict[str, dict[tuple[str, str], str]] = {}
    heads: list[str] = []
    name = ""
    for line in path.read_text().splitlines():
        if not line or line.startswith(("#", "pyspark\t")):
            continue
        row = line.split("\t")
        if row[0] in names:
            name, heads = row[0], row[1:]
            out[name] = {}
            continue
        out[name].update({(row[0], col): c for col, c in zip(heads, row[1:], strict=True)})
    return out


@functools.cache
def tables() -> dict[str, dict[tuple[str, str], str]]:
    """Per level (top, element, key): (from, to) -> cell (`+`, `c`, `t`, `-`, `?`: see the file's header)."""
    return read_matrices(FILE, ("top", "element", "key"))


def kinds() -> list[str]:
    """The types the tables name, in the file's order."""
    return list(dict.fromkeys(src for src, _ in tables()["top"]))


def verdict(src: str, dst: str, try_: bool = False) -> bool | None:
    """Whether Spark's analysis takes a cast of a value of type `src` to `dst` (True/False), None when the tables
    cannot tell (an unknown type)."""
    s, d = parse_kind(src), parse_kind(dst)
    if s is None or d is None:
        return None
    return _can(s, d, try_, "top")


def targets(src: str, try_: bool = False) -> list[str]:
    """The types a value of type `src` casts to, as the tables name them (e.g. for a hint)."""
    s = parse_kind(src)
    if s is None:
        return []
    return [k for k in kinds() if k != "void" and _cell(s[0], k, try_, "top") is True]


def _can(s: Kind, d: Kind, try_: bool, level: str) -> bool | None:
    (sk, sin), (dk, din) = s, d
    if sk == dk and sk in _CONTAINERS:
        if sk == "array":
            return _can(sin[0], din[0], try_, "element")
        if sk == "map":
            return _all([_can(sin[0], din[0], try_, "key"), _can(sin[1], din[1], try_, "element")])
        if len(sin) != len(din):
            return False
        return _all([_can(a, b, try_, "element") for a, b in zip(sin, din, strict=True)])
    if level == "key" and dk == "decimal" and sk in _NUMBERS:
        return None  # a key may not turn NULL: it depends on the precisions (Cast.canNullSafeCastToDecimal)
    if s == d:
        return True
    return _cell(sk, dk, try_, level)


def _cell(sk: str, dk: str, try_: bool, level: str) -> bool | None:
    c = tables()[level].get((sk, dk), "?")
    if c == "?":
        return None
    return c == "+" or c == ("t" if try_ else "c")


def _all(answers: list[bool | None]) -> bool | None:
    if False in answers:
        return False
    return None if None in answers else True


@functools.lru_cache(maxsize=1024)
def parse_kind(typ: str) -> Kind | None:
    """A Spark type's text as the tables name it, with the types inside a container; None when unknown."""
    low = typ.strip().lower()
    m = re.match(r"[a-z_]+", low)
    if m is None:
        return None
    head = _ALIASES.get(m.group(0), m.group(0))
    rest = low[m.end():].strip()
    if head in _CONTAINERS:
        if not (rest.startswith("<") and rest.endswith(">")):
            return None
        parts = split_type(rest[1:-1])
        if head == "struct":
            parts = [_field_type(p) for p in parts if p.strip()]
        inner = tuple(parse_kind(p) for p in parts)
        if None in inner or (head == "array" and len(inner) != 1) or (head == "map" and len(inner) != 2):
            return None
        return head, inner  # type: ignore[return-value]
    if head == "interval":
        words = rest.split()
        if not words:
            return None  # a calendar interval: no column has one
        year_month = words[0] in ("year", "month")
        return ("interval year to month" if year_month else "interval day to second") if "to" in words else \
            ("interval month" if year_month else "interval day"), ()
    known = kinds()
    return (head, ()) if head in known else None


def split_type(body: str) -> list[str]:
    """The comma-separated parts of a container's body, nested types kept whole."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def _field_type(field: str) -> str:
    """The type of a struct's field `name: type [NOT NULL] [COMMENT '...']` (or `name type`)."""
    field = field.strip()
    name_end = field.index("`", 1) + 1 if field.startswith("`") and "`" in field[1:] else \
        len(re.match(r"[^:\s]*", field).group(0))  # type: ignore[union-attr]
    text = field[name_end:].lstrip().removeprefix(":")
    return re.split(r"\s+(?:not\s+null|comment)\b", text, maxsplit=1)[0]
