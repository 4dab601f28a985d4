"""rsqldb / Blink built-in functions that Spark spells differently, rewritten to Spark SQL.

Functions Spark has under the same name and meaning (CONCAT, CONCAT_WS, SUBSTRING,
REGEXP_EXTRACT, REGEXP_REPLACE, DATE_FORMAT, FROM_UNIXTIME, UNIX_TIMESTAMP,
TO_TIMESTAMP, PARSE_URL, STR_TO_MAP, LOWER, UPPER, TRIM, CHAR_LENGTH, MD5, IF,
COALESCE, ...) pass through unchanged. The table is in the README ("SQL scripts").
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from sqlglot import exp


def _fn(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _split_index(a: list) -> exp.Expression:  # SPLIT_INDEX(s, sep, i) is 0-based; split_part is 1-based
    idx = a[2]
    one = exp.Literal.number(int(idx.this) + 1) if isinstance(idx, exp.Literal) and not idx.is_string \
        else exp.Add(this=idx, expression=exp.Literal.number(1))
    return _fn("split_part", a[0], a[1], one)


def _keyvalue(a: list) -> exp.Expression:  # KEYVALUE(s, pair_sep, kv_sep, key)
    return exp.Bracket(this=_fn("str_to_map", a[0], a[1], a[2]), expressions=[a[3]])


def _rlike(pattern: str) -> Callable[[list], exp.Expression]:
    return lambda a: exp.RegexpLike(this=a[0], expression=exp.Literal.string(pattern))


def _binary(cls: type) -> Callable[[list], exp.Expression]:
    return lambda a: exp.Paren(this=cls(this=a[0], expression=a[1]))


REWRITES: dict[str, tuple[int, Callable[[list], exp.Expression]]] = {
    "JSON_VALUE": (2, lambda a: _fn("get_json_object", a[0], a[1])),
    "SPLIT_INDEX": (3, _split_index),
    "KEYVALUE": (4, _keyvalue),
    "NOW": (0, lambda a: _fn("current_timestamp")),
    "PROCTIME": (0, lambda a: _fn("current_timestamp")),
    "LOCALTIMESTAMP": (0, lambda a: _fn("current_timestamp")),
    "IFNULL": (2, lambda a: _fn("coalesce", a[0], a[1])),
    "TO_DATE": (1, lambda a: _fn("to_date", a[0])),
    "HASH_CODE": (1, lambda a: _fn("hash", a[0])),  # a 32-bit hash, not Java's String.hashCode values
    "TO_BASE64": (1, lambda a: _fn("base64", a[0])),
    "IS_DIGITS": (1, _rlike("^[0-9]+$")),
    "IS_ALPHA": (1, _rlike("^[A-Za-z]+$")),
    "IS_DECIMAL": (1, _rlike("^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)$")),
    "BITAND": (2, _binary(exp.BitwiseAnd)),
    "BITOR": (2, _binary(exp.BitwiseOr)),
    "BITXOR": (2, _binary(exp.BitwiseXor)),
    "BITNOT": (1, lambda a: exp.BitwiseNot(this=a[0])),
    "RAND_INTEGER": (1, lambda a: exp.Cast(this=_fn("floor", exp.Mul(this=_fn("rand"), expression=a[0])),
                                           to=exp.DataType.build("int"))),
}


_WINDOWING = ("TUMBLE", "HOP", "SESSION", "CUMULATE", "DESCRIPTOR", "TABLE")


@functools.cache
def spark_functions() -> frozenset[str]:
    """Spark's built-in SQL functions (etl/sql/spark_functions.txt, written by scripts/spark_functions.py)."""
    return frozenset((Path(__file__).parent / "spark_functions.txt").read_text().split())


class Functions:
    """Rewrites calls of rsqldb built-ins into Spark SQL; an unknown function is an error with a did-you-mean."""

    def __init__(self, on_unknown: Callable[[exp.Anonymous], None] | None = None):
        self.on_unknown = on_unknown

    def translate(self, node: exp.Expression) -> exp.Expression:
        def fix(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.FromBase64):  # Blink's FROM_BASE64 gives text; Spark's unbase64 bytes
                out = _fn("decode", _fn("unbase64", n.this), exp.Literal.string("UTF-8"))
                out.meta.update(n.meta)
                return out
            if isinstance(n, exp.Anonymous):
                name = n.name.upper()
                rule = REWRITES.get(name)
                if rule is not None and len(n.expressions) == rule[0]:
                    out = rule[1](list(n.expressions))
                    out.meta.update(n.meta)
                    return out
                windowing = name in _WINDOWING or name.split("_")[0] in _WINDOWING[:4]
                if not windowing and name.lower() not in spark_functions() and self.on_unknown is not None:
                    self.on_unknown(n)
            return n

        return node.transform(fix, copy=False)


def unknown_hint(name: str) -> str:
    from etl.diagnostics import did_you_mean

    known = sorted(spark_functions() | {k.lower() for k in REWRITES})
    return did_you_mean(name.lower(), known) or "a Spark SQL built-in function or an rsqldb one (README: SQL scripts)"
