"""Column access and native predicates over pyarrow batches (used by the matcher).

Values follow :mod:`etl.optimize.reference`: a field is a column, or a path into
struct columns, or all-null when absent; kinds are text, bool, int, float and
other; the text form of a bool is ``true``/``false``, of a number its Python
``str``; derivations use pyarrow kernels when a column is pure ASCII (where
they agree with Python's ``str`` methods) and Python's ``str`` methods
otherwise; native predicates are vectorized with pyarrow.compute, except cidr
and caseless equality, evaluated once per distinct value.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ASCII_WS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
_ASCII_WS_RE = "[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f ]+"
_WS_RUN = re.compile(r"\s+")


def value_kind(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "text"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_null(t):
        return "null"
    return "other"


def to_np(arr: Any) -> np.ndarray:
    """Boolean pyarrow array (nulls -> False) as a numpy bool array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = arr.fill_null(False)
    return arr.to_numpy(zero_copy_only=False)


def _py_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _derive_py(s: str, d: str) -> str:
    if d == "lower":
        return s.lower()
    if d == "upper":
        return s.upper()
    if d == "trim":
        return s.strip()
    return _WS_RUN.sub(" ", s)


def derive_array(arr: pa.Array, derivations: tuple[str, ...]) -> pa.Array:
    """Apply derivations to a string array: pyarrow kernels when all ASCII, else Python's str methods."""
    if not derivations or len(arr) == 0:
        return arr
    if arr.null_count == len(arr) or pc.all(pc.string_is_ascii(arr)).as_py() is not False:
        for d in derivations:
            if d == "lower":
                arr = pc.ascii_lower(arr)
            elif d == "upper":
                arr = pc.ascii_upper(arr)
            elif d == "trim":
                arr = pc.ascii_trim(arr, characters=ASCII_WS)
            else:
                arr = pc.replace_substring_regex(arr, pattern=_ASCII_WS_RE, replacement=" ")
        return arr
    vals = arr.to_pylist()
    for d in derivations:
        vals = [None if v is None else _derive_py(v, d) for v in vals]
    return pa.array(vals, pa.string())


class BatchView:
    """Per-batch column access with caches (field -> array, subject -> derived text)."""

    def __init__(self, batch: pa.RecordBatch):
        self.batch = batch
        self.n = batch.num_rows
        self._cols: dict[str, pa.Array] = {}
        self._text: dict[tuple, pa.Array] = {}
        self._valid: dict[object, np.ndarray] = {}

    def column(self, field: str) -> pa.Array:
        got = self._cols.get(field)
        if got is not None:
            return got
        b = self.batch
        idx = b.schema.get_field_index(field)
        if idx >= 0:
            arr = b.column(idx)
        else:
            arr = None
            parts = field.split(".")
            idx = b.schema.get_field_index(parts[0])
            if idx >= 0 and len(parts) > 1:
                arr = b.column(idx)
                for part in parts[1:]:
                    if not pa.types.is_struct(arr.type) or arr.type.get_field_index(part) < 0:
                        arr = None
                        break
                    arr = pc.struct_field(arr, [part])
            if arr is None:
                arr = pa.nulls(self.n)
        self._cols[field] = arr
        return arr

    def text(self, field: str, derivations: tuple[str, ...]) -> pa.Array:
        """Derived text form of a field (null where there is none), as a utf8 or large_utf8 array."""
        key = (field, derivations)
        got = self._text.get(key)
        if got is not None:
            return got
        arr = self.column(field)
        k = value_kind(arr.type)
        if k == "text":
            if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
                arr = arr.cast(pa.string())
        elif k in ("int", "bool"):
            arr = pc.cast(arr, pa.string())
        elif k == "float":
            arr = pa.array([_py_text(v) for v in arr.to_pylist()], pa.string())
        else:
            arr = pa.nulls(self.n, pa.string())
        arr = derive_array(arr, derivations)
        self._text[key] = arr
        return arr

    def raw_valid(self, field: str) -> np.ndarray:
        got = self._valid.get(field)
        if got is None:
            got = self._valid[field] = to_np(self.column(field).is_valid())
        return got

    def numbers(self, field: str) -> np.ndarray:
        """A numeric (or bool) column as numpy, nulls filled with 0 (mask them with raw_valid)."""
        key = ("#", field)
        got = self._valid.get(key)
        if got is None:
            arr = self.column(field)
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            if arr.null_count:
                arr = arr.fill_null(False if pa.types.is_boolean(arr.type) else 0)
            got = self._valid[key] = arr.to_numpy(zero_copy_only=False)
        return got

    def valid(self, field: str, derivations: tuple[str, ...]) -> np.ndarray:
        key = (field, derivations)
        got = self._valid.get(key)
        if got is None:
            got = to_np(self.text(field, derivations).is_valid())
            self._valid[key] = got
        return got


# --------------------------------------------------------------------------- native predicates


def _per_value(arr: pa.Array, fn: Callable[[str], bool]) -> np.ndarray:
    """Evaluate ``fn`` once per distinct non-null value."""
    if arr.null_count == len(arr):
        return np.zeros(len(arr), dtype=bool)
    enc = pc.dictionary_encode(arr)
    vals = np.array([fn(v) for v in enc.dictionary.to_pylist()], dtype=bool)
    idx = enc.indices.fill_null(0).to_numpy(zero_copy_only=False) if enc.indices.null_count else enc.indices.to_numpy()
    out = vals[idx] if len(vals) else np.zeros(len(arr), dtype=bool)
    if enc.indices.null_count:
        out &= to_np(enc.indices.is_valid())
    return out


def _compatible(kind: str, v: Any) -> bool:
    if isinstance(v, bool):
        return kind == "bool"
    if isinstance(v, (int, float)):
        return kind in ("int", "float")
    if isinstance(v, str):
        return kind == "text"
    return False


def _caseless_eq(target: str) -> Callable[[str], bool]:
    rx = re.compile(re.escape(target), re.IGNORECASE)
    return lambda s: rx.fullmatch(s) is not None


def _int_range(t: pa.DataType) -> tuple[int, int]:
    if pa.types.is_unsigned_integer(t):
        return 0, 2**t.bit_width - 1
    return -2**(t.bit_width - 1), 2**(t.bit_width - 1) - 1


def _eq_array(b: BatchView, field: str, arr: pa.Array, kind: str, values: tuple, caseless: bool) -> np.ndarray:
    """Where the field equals one of ``values`` (same kind; numbers numerically, IEEE)."""
    vals = [v for v in values if _compatible(kind, v) and v == v]  # NaN equals nothing
    out = np.zeros(len(arr), dtype=bool)
    if not vals:
        return out
    if kind == "text":
        if caseless:
            fns = [_caseless_eq(v) for v in vals]
            return _per_value(arr, lambda s: any(f(s) for f in fns))
        return to_np(pc.is_in(arr, value_set=pa.array(vals, arr.type)))
    nums = b.numbers(field)
    if kind == "int":
        lo, hi = _int_range(arr.type)
        vals = [int(v) for v in vals if (isinstance(v, int) or float(v).is_integer()) and lo <= v <= hi]
    for v in vals:
        out |= nums == v
    return out & b.raw_valid(field)


_CMP_FN = {"gt": pc.greater, "ge": pc.greater_equal, "lt": pc.less, "le": pc.less_equal}


def _cidr_fn(nets: tuple[str, ...]) -> Callable[[str], bool]:
    parsed = [ipaddress.ip_network(n, strict=False) for n in nets]

    def f(s: str) -> bool:
        try:
            a = ipaddress.ip_address(s)
        except ValueError:
            return False
        return any(a in net for net in parsed)

    return f


@lru_cache(maxsize=4096)
def _caseless_eq_cached(target: str) -> Callable[[str], bool]:
    return _caseless_eq(target)


def _same(x: Any, y: Any, caseless: bool) -> bool:
    """eq's meaning between two values (same kind; numbers numerically; text caselessly with `caseless`)."""
    def kind(v: Any) -> str:
        return ("bool" if isinstance(v, bool) else "number" if isinstance(v, (int, float))
                else "text" if isinstance(v, str) else "other")

    if x is None or y is None or kind(x) != kind(y):
        return False
    if caseless and isinstance(x, str):
        return _caseless_eq_cached(y)(x)
    return x == y


def eval_native(key, b: BatchView) -> np.ndarray:
    op = key.op
    n = b.n
    raw = b.column(key.field)
    if op == "fieldref":
        other = b.column(key.value).to_pylist()
        return np.array([_same(x, y, key.caseless) for x, y in zip(raw.to_pylist(), other, strict=True)], dtype=bool)
    if op == "is_null":
        return ~b.raw_valid(key.field)
    if op == "not_null":
        return b.raw_valid(key.field)
    kind = value_kind(raw.type)
    if op == "has_text":
        if kind in ("text", "int", "float", "bool"):
            return b.raw_valid(key.field)
        return np.zeros(n, dtype=bool)
    if op == "cidr":
        return _per_value(b.text(key.field, key.derivations), _cidr_fn(key.value))
    arr = raw
    if kind == "text":
        arr = b.text(key.field, key.derivations)
    if op in ("eq", "ne", "in"):
        values = key.value if op == "in" else (key.value,)
        eq = _eq_array(b, key.field, arr, kind, values, key.caseless)
        if op == "ne":
            return b.raw_valid(key.field) & ~eq
        return eq
    if op in _CMP_FN:
        v = key.value
        if isinstance(v, str):
            if kind != "text":
                return np.zeros(n, dtype=bool)
            return to_np(_CMP_FN[op](arr, pa.scalar(v, arr.type)))
        if kind not in ("int", "float"):
            return np.zeros(n, dtype=bool)
        nums, t = b.numbers(key.field), float(v)
        cmp = nums > t if op == "gt" else nums >= t if op == "ge" else nums < t if op == "lt" else nums <= t
        return cmp & b.raw_valid(key.field)
    raise ValueError(f"not a native operator: {op}")
