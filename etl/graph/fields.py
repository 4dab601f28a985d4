"""What `etl validate` checks of a column reference beyond its root name, without a JVM.

* `missing_field`: the nested path `user.geo.country` against a declared struct type (Spark resolves struct
  fields case-insensitively, as columns); a field that is not there fails the run's analysis.
* `value_problem`: a rule's value against its field's type (`ge: five-hundred` on an int column): a value that
  Spark cannot cast to the type never matches, so it is an error.
* `unknown_calls`: the calls of a Spark SQL expression whose function Spark does not know (as the SQL
  front-end's E012), found on the expression's tokens as written: sqlglot maps some names (`week`) onto its own
  expression classes, which Spark itself does not have.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from etl.diagnostics import did_you_mean
from etl.graph.names import find as _find
from etl.graph.types import struct_fields

_INTEGRAL = {"tinyint": (-2**7, 2**7 - 1), "byte": (-2**7, 2**7 - 1), "smallint": (-2**15, 2**15 - 1),
             "short": (-2**15, 2**15 - 1), "int": (-2**31, 2**31 - 1), "integer": (-2**31, 2**31 - 1),
             "bigint": (-2**63, 2**63 - 1), "long": (-2**63, 2**63 - 1)}
_FRACTIONAL = ("float", "double", "real", "decimal", "dec", "numeric")
# the texts Spark's cast to boolean accepts (StringUtils.isTrueString / isFalseString), case-insensitively
_BOOLEAN_TEXTS = frozenset({"t", "true", "y", "yes", "1", "f", "false", "n", "no", "0"})
# Spark's cast of text to a timestamp / date (DateTimeUtils.stringToTimestamp): a year, then optional month, day,
# time with fraction, and zone; 'T' or a space between date and time
_DATE = r"[+-]?\d{4,6}(?:-\d{1,2}(?:-\d{1,2})?)?"
_TIME = r"\d{1,2}(?::\d{1,2}(?::\d{1,2}(?:\.\d{0,9})?)?)?"
_ZONE = r"(?:\s*(?:Z|UTC|GMT|UT|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?|[A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?))?"
_TIMESTAMP_TEXT = re.compile(rf"\s*{_DATE}(?:[T ]{_TIME}{_ZONE})?\s*")
_DATE_TEXT = re.compile(rf"\s*{_DATE}(?:[T ].*)?\s*")
# syntax written like a call that is no function of SHOW FUNCTIONS
_SYNTAX_CALLS = frozenset({"try_cast", "timestampadd", "timestampdiff"})  # timestampadd(HOUR, 1, ts)


@dataclass(frozen=True)
class Miss:
    """A nested path that does not resolve: the part (0-based index in the path) and why."""

    index: int
    message: str
    hint: str


def missing_field(column: str, typ: str, parts: list[str]) -> Miss | None:
    """Walk `parts` (the path after `column`) through the column's type `typ`; None when it resolves or the type is
    not known well enough to tell (a map, a variant, an unknown type)."""
    here = column
    for i, part in enumerate(parts):
        low = typ.strip().lower()
        if low.startswith("array<"):  # a.b over array<struct<b ...>> gives the array of each element's b
            typ = typ.strip()[len("array<"):-1]
            low = typ.strip().lower()
        fields = struct_fields(typ) if low.startswith("struct") else None
        if fields is None:
            if low in _INTEGRAL or low in ("string", "boolean", "date", "timestamp", "double", "float", "binary") \
                    or low.startswith(_FRACTIONAL):
                return Miss(i, f"'{here}' is {low}: it has no field '{part}'",
                            "only a struct (or an array of structs) has fields: read the column itself")
            return None
        found = _find(fields, part)
        if found is None:
            hint = did_you_mean(part, list(fields)) or "its fields: " + ", ".join(list(fields)[:15])
            return Miss(i, f"no field '{part}' in struct '{here}'", hint)
        here = f"{here}.{found}"
        typ = fields[found]
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def value_problem(value: Any, typ: str) -> str | None:
    """Why a rule's `value` cannot be compared with a column of Spark type `typ` (None: it can, or the type is not
    one this check knows)."""
    low = typ.strip().lower()
    if low in _INTEGRAL or low.startswith(_FRACTIONAL):
        n = _number(value)
        if n is None:
            return "is not a number"
        if low in _INTEGRAL and not math.isnan(n) and not math.isinf(n):
            lo, hi = _INTEGRAL[low]
            if isinstance(value, int) and not lo <= value <= hi:
                return f"is out of the range of {low} ({lo} to {hi})"
        return None
    if low == "boolean":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return None
        if isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXTS:
            return None
        return "is not a boolean (true or false)"
    if low in ("timestamp", "timestamp_ntz", "timestamp_ltz", "date"):
        if not isinstance(value, str):
            return None if isinstance(value, (int, float)) and not isinstance(value, bool) else \
                f"is not a {low} (write it as text: '2024-05-01 12:00:00')"
        pattern = _DATE_TEXT if low == "date" else _TIMESTAMP_TEXT
        if pattern.fullmatch(value) is None:
            return f"is not a {low} Spark can read (e.g. '2024-05-01T12:00:00Z' or '2024-05-01')"
    return None


def unknown_calls(text: str, known: Callable[[str], bool]) -> list[tuple[str, int]]:
    """(name, 0-based offset in `text`) of each call `name(` whose name `known` does not accept."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.errors import TokenError
    from sqlglot.tokens import TokenType

    try:
        toks = Spark().tokenize(text)
    except TokenError:  # the parse reports it
        return []
    out = []
    for tok, nxt in zip(toks, toks[1:], strict=False):
        if nxt.token_type != TokenType.L_PAREN or tok.token_type not in (TokenType.VAR, TokenType.IDENTIFIER):
            continue
        if tok.token_type == TokenType.VAR and tok.text.lower() in _SYNTAX_CALLS:
            continue
        if not known(tok.text):
            out.append((tok.text, tok.start + (1 if tok.token_type == TokenType.IDENTIFIER else 0)))
    return out
