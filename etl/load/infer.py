"""The columns of a jsonl/csv file source without a `schema`, inferred at validate from a bounded sample of its
files, in Python (no JVM), as Spark infers them over the same lines.

jsonl is Spark's JSON inference (JsonInferSchema, PERMISSIVE, its defaults: no timestamp or decimal inference
of strings): each line's value typed (integers bigint, an integer past bigint decimal(p,0) up to 38 digits, else
double; other numbers double; an empty string is null), object fields sorted by name, types merged (bigint and
double: double; decimal and bigint: the wider decimal; anything else: string), a top-level array read as its
rows, a malformed line or a top-level scalar left out (Spark's `_corrupt_record`, which etl's reader keeps for
the dead letters), and finally null-only columns string, empty objects and arrays of them dropped.

csv is Spark's CSV inference with the options etl's csv source sets (header, sep, inferSchema): the first
non-blank line is the header (empty names `_c<i>`, case-insensitive duplicates suffixed with their index), lines
equal to it are skipped, and each column's type goes int -> bigint -> decimal(p,0) -> double -> date (yyyy-MM-dd)
-> timestamp -> boolean -> string as its values require (CSVInferSchema).

`etl run` reads the source with the columns inferred here (etl.components.sources.file.build), so validate and run
agree by construction; the sample is at most ETL_INFER_FILES files, ETL_INFER_LINES lines and ETL_INFER_KB KB of
each (etl explain says how much was read). Every file is read through etl.load.paths (allowed folders, regular
files, a head read without blocking).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import reduce
from typing import Any
from collections.abc import Iterable

from etl import settings
from etl.load.paths import SAMPLES, PathError, read_head, resolve

Type = Any  # "string", "bigint", ... | ("decimal", p, s) | ("array", Type) | ("struct", ((name, Type), ...))
NULL, STRING, INT, LONG, DOUBLE, BOOL, DATE, TIMESTAMP = (
    "null", "string", "int", "bigint", "double", "boolean", "date", "timestamp")
MIN_LONG, MAX_LONG = -2**63, 2**63 - 1
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Sample:
    """What the sample gave: `columns` (None: not inferred, `skipped` says why), how much was read, and whether a
    bound (files, lines or bytes) cut it."""

    columns: dict[str, str] | None
    files: int = 0
    lines: int = 0
    cut: bool = False
    skipped: str = ""

    def text(self, limits: tuple[int, int, int]) -> str:
        files, lines, kb = limits
        return (f"schema inferred from {self.files} file{'s' if self.files != 1 else ''}, {self.lines:,} "
                f"line{'s' if self.lines != 1 else ''}" + (f" (a sample: at most {files} files, {lines:,} lines and "
                                                           f"{kb:,} KB of each)" if self.cut else " (all of them)"))


def limits() -> tuple[int, int, int]:
    """(files, lines per file, KB per file) of a sample (ETL_INFER_FILES, ETL_INFER_LINES, ETL_INFER_KB)."""
    s = settings.current()
    return s.infer_files, s.infer_lines, s.infer_kb


def infer_columns(path: str, base_dir: str, fmt: str, header: bool = True, delimiter: str = ",") -> Sample:
    """The columns Spark would infer for a jsonl or csv file source reading `path` (a file, folder or glob)."""
    if _REMOTE.match(path):
        return Sample(None, skipped=f"{path.split(':', 1)[0]}:// files are not read at validate")
    try:
        files = [f for f in resolve(path, base_dir, SAMPLES) if not _hidden(os.path.relpath(f, base_dir))]
    except PathError as e:
        return Sample(None, skipped=e.message)
    if not files:
        return Sample(None, skipped=f"no file matches {path} yet")
    max_files, max_lines, kb = limits()
    cut = len(files) > max_files
    texts: list[list[bytes]] = []
    if fmt == "csv":  # Spark's header is the first line of its first partition: the largest file's (a stable sort)
        files[:max_files] = sorted(files[:max_files], key=lambda f: -os.path.getsize(f))
    for f in files[:max_files]:
        if f.endswith((".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".xz")):
            return Sample(None, skipped=f"{os.path.relpath(f, base_dir)} is compressed")
        try:
            head, whole = read_head(f, SAMPLES, kb * 1024)
        except PathError as e:
            return Sample(None, skipped=e.message)
        lines = head.splitlines()  # \n, \r\n and \r, as Hadoop's line reader
        if not whole and lines and not head.endswith((b"\n", b"\r")):
            lines.pop()  # a line cut at the byte bound
        cut = cut or not whole or len(lines) > max_lines
        texts.append(lines[:max_lines])
    try:
        columns = _json(texts) if fmt == "jsonl" else _csv(texts, header, delimiter)
    except _Unread as e:
        return Sample(None, skipped=str(e))
    return Sample(columns, len(texts), sum(len(t) for t in texts), cut)


def _hidden(rel: str) -> bool:
    """Spark's file listing leaves out names starting with _ or . (a sink's _spark_metadata, _SUCCESS)."""
    return any(part.startswith(("_", ".")) for part in rel.split(os.sep) if part not in (".", ".."))


# ---------------------------------------------------------------------------------------------- shared type algebra
def _decimal_or_long(t: Type) -> Type:
    return ("decimal", 20, 0) if t == LONG else ("decimal", 10, 0) if t == INT else t


def _is_decimal(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] == "decimal"


def _wider_decimal(a: Type, b: Type) -> Type:
    scale = max(a[2], b[2])
    rng = max(a[1] - a[2], b[1] - b[2])
    return DOUBLE if rng + scale > 38 else ("decimal", rng + scale, scale)


_NUMERIC = (INT, LONG, DOUBLE)  # Spark's numeric precedence (the integral types and double a sample gives)


def _tightest(a: Type, b: Type) -> Type | None:
    """Spark's TypeCoercion.findTightestCommonType over the types a sample gives."""
    if a == b:
        return a
    if a == NULL:
        return b
    if b == NULL:
        return a
    if a in (INT, LONG) and _is_decimal(b):
        return b if b[1] - b[2] >= _decimal_or_long(a)[1] and b[2] >= 0 else None
    if b in (INT, LONG) and _is_decimal(a):
        return a if a[1] - a[2] >= _decimal_or_long(b)[1] and a[2] >= 0 else None
    if a in _NUMERIC and b in _NUMERIC:
        return a if _NUMERIC.index(a) > _NUMERIC.index(b) else b
    if {a, b} == {DATE, TIMESTAMP}:
        return TIMESTAMP
    return None


# ---------------------------------------------------------------------------------------------- jsonl
class _Num:
    __slots__ = ("type",)

    def __init__(self, t: Type):
        self.type = t


def _int(text: str) -> _Num:
    digits = len(text.lstrip("-"))
    if digits < 19 or (digits == 19 and MIN_LONG <= int(text) <= MAX_LONG):
        return _Num(LONG)
    return _Num(("decimal", digits, 0) if digits <= 38 else DOUBLE)  # Jackson's BIG_INTEGER


_DOUBLE = _Num(DOUBLE)
def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # Spark's inference keeps both fields: a struct with two columns of one name
        raise _Unread(f"a sampled object has the key {next(k for k in out if [p[0] for p in pairs].count(k) > 1)!r} "
                      "twice")
    return out


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=lambda _s: _DOUBLE, parse_constant=lambda _s: _DOUBLE,
                            object_pairs_hook=_object)
_WS = " \t\n\r"


def _json_type(v: Any) -> Type:
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, _Num):
        return v.type
    if isinstance(v, str):
        return NULL if v == "" else STRING  # Spark: an empty string is typed as a null is
    if isinstance(v, list):
        return ("array", reduce(_json_merge, (_json_type(x) for x in v), NULL))
    fields = sorted(((k, _json_type(x)) for k, x in v.items()), key=lambda f: f[0].encode("utf-16-be"))
    return ("struct", tuple(fields))


def _json_merge(a: Type, b: Type) -> Type:
    """Spark's JsonInferSchema.compatibleType."""
    t = _tightest(a, b)
    if t is not None:
        return t
    if (a == DOUBLE and _is_decimal(b)) or (b == DOUBLE and _is_decimal(a)):
        return DOUBLE
    if _is_decimal(a) and _is_decimal(b):
        return _wider_decimal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "struct":
        return ("struct", _merge_fields(a[1], b[1]))
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "array":
        return ("array", _json_merge(a[1], b[1]))
    if a in (INT, LONG) and _is_decimal(b):
        return _json_merge(_decimal_or_long(a), b)
    if b in (INT, LONG) and _is_decimal(a):
        return _json_merge(a, _decimal_or_long(b))
    return STRING


def _merge_fields(f1: tuple, f2: tuple) -> tuple:
    out = dict(f1)
    for name, t in f2:
        out[name] = _json_merge(out[name], t) if name in out else t
    return tuple(sorted(out.items(), key=lambda f: f[0].encode("utf-16-be")))


def _root(a: Type, b: Type) -> Type:
    """Spark's compatibleRootType: top-level arrays read as their elements, nulls and non-objects left out."""
    while isinstance(b, tuple) and b[0] == "array":
        b = b[1]
    if not (isinstance(b, tuple) and b[0] == "struct"):
        return a
    return b if a is None else _json_merge(a, b)


_SINGLE_QUOTED = re.compile(rb"[{\[,:]\s*'")


class _Unread(Exception):
    """A sample whose columns cannot be told exactly (its message says why)."""


def _json_doc(line: bytes) -> Type:
    try:
        text = line.decode("utf-8")
        start = len(text) - len(text.lstrip(_WS))
        if start == len(text):
            return NULL  # a blank line: no document
        return _json_type(_DECODER.raw_decode(text, start)[0])  # Jackson reads the first value of the line
    except (ValueError, RecursionError):
        if _SINGLE_QUOTED.search(line):  # Spark's allowSingleQuotes (on by default) reads it: not inferred here
            raise _Unread("a sampled line is JSON with single quotes, which Spark reads and etl's sample does not") \
                from None
        return NULL  # a malformed line: Spark's _corrupt_record only


def _canonical(t: Type) -> Type | None:
    """Spark's canonicalizeType: null-only is string, an empty struct is dropped (and an array of one)."""
    if t == NULL:
        return STRING
    if isinstance(t, tuple) and t[0] == "array":
        inner = _canonical(t[1])
        return None if inner is None else ("array", inner)
    if isinstance(t, tuple) and t[0] == "struct":
        fields = tuple((n, c) for n, x in t[1] if n != "" for c in (_canonical(x),) if c is not None)
        return ("struct", fields) if fields else None
    return t


def _json(files: list[list[bytes]]) -> dict[str, str]:
    root: Type = None
    for lines in files:
        for line in lines:
            root = _root(root, _json_doc(line))
    top = _canonical(root) if root is not None else None
    return {name: render(t) for name, t in top[1]} if top is not None else {}


# ---------------------------------------------------------------------------------------------- csv
_JAVA_TRIM = "".join(chr(i) for i in range(33))
_INTEGER = re.compile(r"[+-]?\d+\Z")
_BIG_DECIMAL = re.compile(r"[+-]?(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?\Z")
_JAVA_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?"
                          r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?)\Z", re.ASCII)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z", re.ASCII)
_ZONE = re.compile(r"(?:Z|UTC|GMT|UT)?(?:[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?\Z|[A-Za-z]+(?:/[A-Za-z_+-]+)+\Z", re.ASCII)


def _integer(field: str) -> int | None:
    """The value of a whole number Java's parseInt/parseLong could read (None: not one, or past 20 digits)."""
    if not _INTEGER.match(field) or len(field.lstrip("+-").lstrip("0")) > 20:
        return None
    return int(field)


def _csv_int(field: str) -> Type:
    v = _integer(field)
    if v is not None and -2**31 <= v < 2**31:
        return INT
    return _csv_long(field)


def _csv_long(field: str) -> Type:
    v = _integer(field)
    if v is not None and MIN_LONG <= v <= MAX_LONG:
        return LONG
    return _csv_decimal(field)


def _csv_decimal(field: str) -> Type:
    m = _BIG_DECIMAL.match(field)
    if m is not None:
        whole, frac, only_frac, exp = m.groups()
        digits = (whole or "") + (frac or only_frac or "")
        scale = len(frac or only_frac or "") - int(exp or 0)
        precision = max(len(digits.lstrip("0")), 1)
        if scale == 0 and precision <= 38:  # a negative scale fails, a positive one is tried as a double
            return ("decimal", precision, 0)
    return _csv_double(field)


def _csv_double(field: str) -> Type:
    if _JAVA_DOUBLE.match(field.strip(_JAVA_TRIM)) or field in ("NaN", "Inf", "-Inf"):
        return DOUBLE
    return _csv_date(field)


def _csv_date(field: str) -> Type:
    m = _DATE.match(field)
    if m is not None and _valid_date(int(m[1]), int(m[2]), int(m[3])):
        return DATE
    return _csv_timestamp(field, zoned=False)


def _csv_timestamp(field: str, zoned: bool = True) -> Type:
    parsed = _timestamp(field)
    if parsed is not None and (zoned or (parsed == "" and not _just_time(field))):
        return TIMESTAMP
    if not zoned:
        return _csv_timestamp(field)
    return BOOL if field.lower() in ("true", "false") else STRING


def _csv_bool(field: str) -> Type:
    return BOOL if field.lower() in ("true", "false") else STRING


def _valid_date(y: int, m: int, d: int) -> bool:
    import calendar

    return 1 <= m <= 12 and 1 <= d <= calendar.monthrange(y if 1 <= y <= 9999 else 2000, m)[1]


def _just_time(field: str) -> bool:
    t = field.strip(_JAVA_TRIM)
    return t.startswith("T") or (":" in t.split("-", 1)[0] and not t.startswith(("+", "-")))


_TS = re.compile(r"(?:[+-]?(?P<y>\d{4,6})(?:-(?P<mo>\d{1,2})(?:-(?P<d>\d{1,2})(?:[ T](?P<rest>.*))?)?)?"
                 r"|T?(?P<time>\d{1,2}:.*))\Z", re.ASCII | re.S)
_TIME = re.compile(r"(?P<h>\d{1,2})(?::(?P<mi>\d{1,2})(?::(?P<s>\d{1,2})(?:\.(?P<f>\d*))?)?)?(?P<zone>.*)\Z",
                   re.ASCII | re.S)


def _timestamp(field: str) -> str | None:
    """Spark's stringToTimestamp (its default timestamp parser): None when it fails, else the zone text ('' none)."""
    m = _TS.match(field.strip(_JAVA_TRIM))
    if m is None:
        return None
    if m["y"] is not None:
        y, mo, d = int(m["y"]), int(m["mo"] or 1), int(m["d"] or 1)
        if not _valid_date(y, mo, d):
            return None
        rest = m["rest"]
        if rest is None:
            return ""
    else:
        rest = m["time"]
    t = _TIME.match(rest)
    if t is None or (t["zone"] and t["s"] is None):  # a zone only after the seconds
        return None
    h, mi, s = int(t["h"]), int(t["mi"] or 0), int(t["s"] or 0)
    zone = t["zone"].strip(" ")
    if h > 23 or mi > 59 or s > 59 or (zone and not _ZONE.match(zone)):
        return None
    return zone


_CSV_STEP = {NULL: _csv_int, INT: _csv_int, LONG: _csv_long, DOUBLE: _csv_double, DATE: _csv_date,
             TIMESTAMP: _csv_timestamp, BOOL: _csv_bool}


def _csv_merge(a: Type, b: Type) -> Type | None:
    """CSVInferSchema.compatibleType (None: none, the caller's fallback); a date and a timestamp are a timestamp
    (Spark 4: the default date format is one its lenient timestamp parser reads)."""
    t = _tightest(a, b)
    if t is not None:
        return t
    if STRING in (a, b):
        return STRING
    if a in (INT, LONG) and _is_decimal(b):
        return _csv_merge(_decimal_or_long(a), b)
    if b in (INT, LONG) and _is_decimal(a):
        return _csv_merge(a, _decimal_or_long(b))
    if (a == DOUBLE and _is_decimal(b)) or (b == DOUBLE and _is_decimal(a)):
        return DOUBLE
    if _is_decimal(a) and _is_decimal(b):
        return _wider_decimal(a, b)
    return None


def _csv_field(so_far: Type, field: str | None) -> Type:
    if not field:
        return so_far
    if so_far == STRING:
        return STRING
    step = _csv_decimal if _is_decimal(so_far) else _CSV_STEP[so_far]
    merged = _csv_merge(so_far, step(field))
    return STRING if merged is None else merged


def _java_blank(line: str) -> bool:
    return line.strip(_JAVA_TRIM) == ""


def _safe_header(row: list[str]) -> list[str]:
    """Spark's makeSafeHeader (case-insensitive): an empty name is _c<i>, a duplicate gets its index appended."""
    lower = [n.lower() for n in row]
    dupes = {n for n in lower if lower.count(n) > 1}
    return [f"_c{i}" if n == "" else f"{n}{i}" if n.lower() in dupes else n for i, n in enumerate(row)]


def _rows(lines: Iterable[str], delimiter: str) -> Iterable[list[str]]:
    """Each line's fields on its own, as Spark's csv reader splits them without multiLine: a field opening with a
    quote runs to its closing quote (a backslash escapes a quote or itself inside), then to the delimiter; a quote
    left open ends with its line; outside quotes every character, a backslash too, is the field's own."""
    for line in lines:
        out, i, n = [], 0, len(line)
        while True:
            buf: list[str] = []
            if i < n and line[i] == '"':
                i += 1
                while i < n:
                    c = line[i]
                    if c == "\\" and i + 1 < n and line[i + 1] in '"\\':
                        c, i = line[i + 1], i + 1
                    elif c == '"':
                        i += 1
                        break
                    buf.append(c)
                    i += 1
            j = line.find(delimiter, i)
            out.append("".join(buf) + line[i:j if j >= 0 else n])
            if j < 0:
                break
            i = j + 1
        yield out


def _csv(files: list[list[bytes]], header: bool, delimiter: str) -> dict[str, str]:
    texts = [[ln.decode("utf-8", "replace") for ln in lines] for lines in files]
    texts = [[ln for ln in lines if not _java_blank(ln)] for lines in texts]
    first = next((lines[0] for lines in texts if lines), None)
    if first is None:
        return {}
    head = next(iter(_rows([first], delimiter)), [])
    names = _safe_header(head) if header else [f"_c{i}" for i in range(len(head))]
    merged: list[Type] | None = None
    for lines in texts:
        types: list[Type] = [NULL] * len(names)
        for row in _rows((ln for ln in lines if not (header and ln == first)), delimiter):
            for i in range(min(len(types), len(row))):
                types[i] = _csv_field(types[i], row[i])
        merged = types if merged is None else [_csv_merge(a, b) or NULL for a, b in zip(merged, types, strict=True)]
    return {n: render(STRING if t == NULL else t) for n, t in zip(names, merged or [NULL] * len(names), strict=True)}


# ---------------------------------------------------------------------------------------------- rendering
def quote(name: str) -> str:
    """A struct field's name as a type string writes it (backticks unless a plain identifier)."""
    return name if _NAME.match(name) else "`" + name.replace("`", "``") + "`"


def render(t: Type) -> str:
    """The Spark SQL type string (`bigint`, `decimal(20,0)`, `array<struct<a:bigint>>`)."""
    if isinstance(t, str):
        return t
    if t[0] == "decimal":
        return f"decimal({t[1]},{t[2]})"
    if t[0] == "array":
        return f"array<{render(t[1])}>"
    return "struct<" + ",".join(f"{quote(n)}:{render(x)}" for n, x in t[1]) + ">"
