"""A Python function's returned value checked against its declared Spark type, on the executor, per row.

The Arrow UDF's output conversion would fail the whole task on a value of the wrong type (a str for a
bigint), or coerce it silently (a dict for a string becomes its repr): a value is taken as it is declared,

* string: str; binary: bytes / bytearray; boolean: bool (numpy's too);
* tinyint .. bigint: an integer (numpy's too, not a bool) in the type's range; float / double: an integer or
  a real number (not a bool); decimal(p, s): Decimal or integer that fits p and s;
* date: date; timestamp / timestamp_ntz: datetime;
* array<T>: list / tuple of T; map<K, V>: dict of K to V; struct<...>: a tuple / list of its fields in
  order, or a dict / Row by field name;
* None for any type (a null); other types (interval, variant ...) are left to Spark.

`problem(dtype, value)` says what is wrong (None: nothing); etl.compile.functions turns it into the row's
error, so the row is a dead letter naming the function, the declared type and the value's type.
"""

from __future__ import annotations

import datetime
import decimal
import numbers
import sys
from typing import Any

_INT_BITS = {"ByteType": 8, "ShortType": 16, "IntegerType": 32, "LongType": 64}


def short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def described(value: Any) -> str:
    """`a str ('abc')`: the value's Python type and (shortened) value."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name} ({short(value)})"


def _is_bool(value: Any) -> bool:
    np = sys.modules.get("numpy")  # a numpy bool can only come from a loaded numpy
    return isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))


def problem(dtype: Any, value: Any) -> str | None:
    """What makes `value` not a `dtype` (a pyspark DataType): None when it is one (or None)."""
    if value is None:
        return None
    kind = type(dtype).__name__
    if kind in _INT_BITS:
        if not isinstance(value, numbers.Integral) or _is_bool(value):
            return described(value)
        half = 1 << (_INT_BITS[kind] - 1)
        return None if -half <= int(value) < half else f"{described(value)}, out of its range"
    if kind in ("DoubleType", "FloatType"):
        return None if isinstance(value, numbers.Real) and not _is_bool(value) else described(value)
    if kind in ("StringType", "CharType", "VarcharType"):
        return None if isinstance(value, str) else described(value)
    if kind == "BinaryType":
        return None if isinstance(value, (bytes, bytearray)) else described(value)
    if kind == "BooleanType":
        return None if _is_bool(value) else described(value)
    if kind == "DecimalType":
        return _decimal(dtype, value)
    if kind == "DateType":
        return None if isinstance(value, datetime.date) else described(value)
    if kind in ("TimestampType", "TimestampNTZType"):
        return None if isinstance(value, datetime.datetime) else described(value)
    if kind == "ArrayType":
        return _array(dtype, value)
    if kind == "MapType":
        return _map(dtype, value)
    if kind == "StructType":
        return _struct(dtype, value)
    return None


def _decimal(dtype: Any, value: Any) -> str | None:
    if not isinstance(value, (decimal.Decimal, numbers.Integral)) or _is_bool(value):
        return described(value)
    d = (decimal.Decimal(int(value)) if isinstance(value, numbers.Integral) else value).normalize()
    if not d.is_finite():
        return f"{described(value)}, not a finite number"
    digits, exp = len(d.as_tuple().digits), int(d.as_tuple().exponent)
    scale, whole = max(-exp, 0), max(digits + exp, 0)
    if d != 0 and (scale > dtype.scale or whole > dtype.precision - dtype.scale):
        return f"{described(value)}, more digits than decimal({dtype.precision},{dtype.scale}) holds"
    return None


def _array(dtype: Any, value: Any) -> str | None:
    if not isinstance(value, (list, tuple)):
        return described(value)
    for i, v in enumerate(value, 1):
        p = problem(dtype.elementType, v)
        if p is not None:
            return f"element {i} is {p}"
    return None


def _map(dtype: Any, value: Any) -> str | None:
    if not isinstance(value, dict):
        return described(value)
    for k, v in value.items():
        p = problem(dtype.keyType, k)
        if p is not None or k is None:
            return f"a key is {p or 'None'}"
        p = problem(dtype.valueType, v)
        if p is not None:
            return f"the value of key {short(k)} is {p}"
    return None


def struct_fields(dtype: Any, value: Any) -> list[tuple[str, Any, Any]] | str:
    """A struct value's (field name, declared type, value): from a dict / Row by name, from a tuple / list
    in order; a description of what is wrong with its shape otherwise."""
    fields = dtype.fields
    if isinstance(value, dict) or hasattr(value, "asDict"):
        d = value if isinstance(value, dict) else value.asDict()
        missing = [f.name for f in fields if f.name not in d]
        if missing:
            return f"no field(s) {', '.join(missing)}"
        return [(f.name, f.dataType, d[f.name]) for f in fields]
    if not isinstance(value, (list, tuple)):
        return described(value)
    if len(value) != len(fields):
        return f"{len(value)} value(s) for its {len(fields)} fields"
    return [(f.name, f.dataType, v) for f, v in zip(fields, value, strict=True)]


def _struct(dtype: Any, value: Any) -> str | None:
    parts = struct_fields(dtype, value)
    if isinstance(parts, str):
        return parts
    for name, typ, v in parts:
        p = problem(typ, v)
        if p is not None:
            return f"field '{name}' is {p}"
    return None


def mismatch(dtype: Any, value: Any) -> str | None:
    """`returned a str ('many') where its declared type is bigint`: what a function returned against its declared
    `dtype` (a pyspark DataType), None when the value is one."""
    wrong = problem(dtype, value)
    if wrong is None:
        return None
    said = described(value)
    detail = wrong[len(said):] if wrong.startswith(said) else f": {wrong}"
    return f"returned {said} where its declared type is {dtype.simpleString()}{detail}"
