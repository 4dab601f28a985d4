"""dissect: Logstash's delimiter-based parser (logstash-plugins/logstash-filter-dissect), pure Python.

A pattern (`%{ts} %{+ts} %{level} %{msg}`) is a list of fields, each with the
delimiter before it and after it. `Dissection.values` is the reference of
Logstash's scan (its Dissector.dissectValues, quirks included): from left to
right each field's value runs up to the first occurrence of its next
delimiter; the last field takes the rest of the line. `apply` sets the fields
as Logstash's fields do (normal, then append in order of their `/n`, then
indirect) and converts (convert_datatype). The JVM engine (etl/jvm/Dissect.java)
scans the same way and etl/components/transforms/dissect/build.py sets the fields with
Spark expressions; tests compare both with this reference.

Kept differences from Logstash (docs/pipeline-format.md "Dissect"): indirect fields (`%{&k}`) go
into one map column (a Spark row's columns are fixed; their names are data);
`convert_datatype` converts fields of the dissection only, `int` into a 64-bit
integer and `float` into a double; a value that does not convert is a failure.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from decimal import Decimal
from collections.abc import Iterable

# Logstash's Dissector: DELIMITER_FIELD_PATTERN, FINAL_DELIMITER_PATTERN; Field: SUFFIX_REGEX, SUFFIX_ONLY_REGEX
_FIELD_RE = re.compile(r"(.*?)%\{([^}]*?)}", re.DOTALL)
_FINAL_RE = re.compile(r"[^}]+\Z")
_SUFFIX = r"(/[0-9]{1,2}|->|/[0-9]{1,2}->|->/[0-9]{1,2})?"  # Java's \d and `.`: ASCII digits, no line break
_SUFFIX_RE = re.compile(rf"(.+?){_SUFFIX}\Z")
_SUFFIX_ONLY_RE = re.compile(rf"{_SUFFIX}\Z")
_REF_PART = r"[^\[\]]+"
_FIELD_REF_RE = re.compile(rf"(?:\[{_REF_PART}\])+\Z")  # a Logstash field reference: [a][b]
# java.math.BigDecimal(String)'s numbers (ASCII digits): what convert_datatype accepts
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\Z")
MAX_EXPONENT = 999_999_999  # a larger one does not convert (BigDecimal's scale is an int)
CONVERSIONS = {"int": "bigint", "float": "double"}
KINDS = ("normal", "skip", "append", "indirect")
_ORDINAL = {"skip": 0, "normal": 1, "append": 100, "indirect": 1000}  # Logstash's Field ordinals


class DissectError(ValueError):
    """A pattern Logstash refuses (or that can never match), with its offset in the pattern text."""

    def __init__(self, message: str, offset: int | None = 0, hint: str | None = None, source: str | None = None,
                 key: str | None = None):
        super().__init__(message)
        self.message = message
        self.offset = offset  # in the pattern of mapping `source` (None: the mapping's key itself)
        self.hint = hint
        self.source = source  # the mapping's field
        self.key = key  # or the convert_datatype entry it is about


@dataclass(frozen=True)
class DissectField:
    index: int  # position in the pattern (the order of the JVM's values)
    kind: str  # KINDS
    name: str  # the key as written, without prefix and suffix ('ts', '[a][b]', '' for %{})
    prev: str | None  # the delimiter before the value (None: the first field, no leading text)
    next: str | None  # the delimiter after it (None: the last field)
    greedy: bool  # `->`: repeats of `next` after the value are skipped
    ordinal: int  # Logstash's sort order of the fields it sets
    offset: int  # of the field's text (`%{`) in the pattern; the auto-added trailing skip: the delimiter's

    @property
    def path(self) -> tuple[str, ...]:
        return field_path(self.name)

    @property
    def join(self) -> str:
        """What Logstash puts between an appended value and the one before it: the delimiter before it, or a
        space when there is none (AbstractField.joinString)."""
        return self.prev if self.prev else " "


def field_path(name: str) -> tuple[str, ...]:
    """Where a field's value goes: `[a][b]` is nested (a struct column), any other name is one column (a dot is
    part of the name, as in Logstash)."""
    if _FIELD_REF_RE.match(name):
        return tuple(name[1:-1].split("]["))
    return (name,)


def _field(index: int, text: str, prev: str | None, nxt: str | None, offset: int) -> DissectField:
    """Logstash's FieldFactory.create."""
    def split(s: str) -> tuple[str, str]:
        if _SUFFIX_ONLY_RE.match(s):
            return "", s
        m = _SUFFIX_RE.match(s)
        return (m.group(1), m.group(2) or "") if m else (s, "")

    def make(kind: str, name: str, suffix: str) -> DissectField:
        ordinal = _ORDINAL[kind]
        if kind == "append" and (n := re.search(r"[0-9]+", suffix)):
            ordinal += int(n.group())
        return DissectField(index, kind, name, prev, nxt, "->" in suffix, ordinal, offset)

    if not text or text[0] == "?":
        return make("skip", *split(text[1:]))
    if text.startswith(("+&", "&+")):
        raise DissectError(f"field %{{{text}}} cannot prefix with both append and indirect ({text[:2]})", offset,
                           "a field is either appended (+) or indirect (&)")
    if text[0] in "+&":
        name, suffix = split(text[1:])
        if not text[1:]:
            raise DissectError(f"field %{{{text}}} is a prefix without a name", offset)
        if not name:
            raise DissectError(f"field %{{{text}}} has a prefix and a suffix but no name", offset)
        return make("append" if text[0] == "+" else "indirect", name, suffix)
    return make("normal", *split(text))


@dataclass(frozen=True)
class Dissection:
    pattern: str
    fields: tuple[DissectField, ...]

    @property
    def lead(self) -> str:
        """The text before the first field (it must start the line)."""
        return self.fields[0].prev or ""

    def values(self, text: str) -> list[str] | None:
        """Each field's value (pattern order, skip fields too), or None when the line does not match: Logstash's
        Dissector.dissectValues (an empty line never matches)."""
        if not text:
            return None
        out = [""] * len(self.fields)
        left = 0
        lead = len(self.lead)
        for f in self.fields:
            # moveBeyondDelimiter
            prev = f.prev
            if prev is not None and self.fields[f.index - 1].greedy:
                if prev:
                    while text.startswith(prev, left):
                        left += len(prev)
            elif prev is not None and left == 0 and lead > 0:
                if not text.startswith(prev):
                    return None
                left = len(prev)
            start = left
            if f.next is None:  # the last field: the rest of the line
                out[f.index] = text[start:]
                break
            # moveNext: a delimiter found at the line's very first character leaves `left` where it is
            pos = text.find(f.next, left) if f.next else -1
            if pos == -1:
                return None
            if pos > 0:
                out[f.index] = text[start:pos]
                left = pos + len(f.next)
        return out


def spec_bytes(d: Dissection) -> bytes:
    """The pattern as etl/jvm/Dissect.java reads it (its docstring has the layout)."""
    lead = d.lead.encode("utf-8")
    out = [b"EDS1", struct.pack("<HI", len(d.fields), len(lead)), lead]
    for f in d.fields:
        out.append(struct.pack("<B", f.index > 0 and d.fields[f.index - 1].greedy))
        if f.next is None:
            out.append(struct.pack("<i", -1))
        else:
            nxt = f.next.encode("utf-8")
            out.append(struct.pack("<i", len(nxt)) + nxt)
    return b"".join(out)


def parse(pattern: str) -> Dissection:
    """A dissect pattern's fields (Logstash's Dissector.handleMapping), or DissectError."""
    if not pattern:
        raise DissectError("a dissect pattern cannot be empty")
    found = list(_FIELD_RE.finditer(pattern))
    if not found:
        raise DissectError("a dissect pattern needs at least one field %{...}", 0,
                           "write each value as %{name} between the delimiters that surround it")
    parts: list[tuple[str, str | None, int]] = []  # (field text, delimiter before, offset)
    for k, m in enumerate(found):
        parts.append((m.group(2), m.group(1) if k or m.group(1) else None, m.start(2) - 2))
    trailing = _FINAL_RE.search(pattern)
    if trailing:  # text after the last field: an automatic skip field takes what follows it
        parts.append(("?auto_added_skip", trailing.group(), trailing.start()))
    fields = []
    for k, (text, prev, offset) in enumerate(parts):
        nxt = parts[k + 1][1] if k + 1 < len(parts) else None
        fields.append(_field(k, text, prev, nxt, offset))
    for f in fields[:-1]:
        if f.next == "":
            following = fields[f.index + 1]
            raise DissectError(f"fields %{{{pattern[f.offset + 2:following.offset - 1]}}} and the one after it have "
                               "no delimiter between them: the pattern never matches (in Logstash either)",
                               following.offset, "put the text that separates the two values between them")
    return Dissection(pattern, tuple(fields))


def parse_mappings(mapping: dict[str, str]) -> list[tuple[str, Dissection]]:
    """Each mapping's dissection, in order; DissectError names the mapping."""
    out = []
    for source, pattern in mapping.items():
        try:
            out.append((source, parse(pattern)))
        except DissectError as e:
            e.source = source
            raise
    return out


@dataclass(frozen=True)
class _Out:  # what etl.grok.columns_of reads
    path: tuple[str, ...]
    spark_type: str


SCALARS = frozenset({"string", "int", "bigint", "smallint", "tinyint"})  # input columns a dissection reads as text


def outputs(mappings: list[tuple[str, Dissection]], columns: dict[str, str], convert_datatype: dict[str, str],
            indirect_field: str) -> dict[str, str]:
    """The columns the transform writes, in order: name -> Spark SQL type (a struct for [a][b] fields, the map of
    indirect fields last). `columns`: the input's. DissectError for what cannot be set in a Spark row."""
    from etl.grok import columns_of

    have: dict[tuple[str, ...], str] = {(k,): v for k, v in columns.items()}
    written: dict[tuple[str, ...], str] = {}
    indirect = False

    def readable(path: tuple[str, ...], what: str, source: str, offset: int | None) -> None:
        typ = written.get(path) or have.get(path)
        if typ is not None and typ not in SCALARS:
            raise DissectError(f"{what} '{'.'.join(path)}' is a column of type {typ}, not text", offset,
                               "dissect reads text (or integer) columns", source)

    for source, d in mappings:
        path = field_path(source)
        if path not in have and path not in written:
            raise DissectError(f"mapping field '{source}' is not a column of the input (nor set by an earlier "
                               "mapping)", None, "name a text column", source)
        readable(path, "mapping field", source, None)
        for f in sets(d):
            if f.kind == "indirect":
                indirect = True
                readable(f.path, "indirect key", source, f.offset)
                continue
            if f.kind == "append":
                readable(f.path, "appended field", source, f.offset)
            if len(f.path) > 1 and (f.path[:1] in have or f.path[:1] in written):
                raise DissectError(f"nested field {f.name} goes into column '{f.path[0]}', which is already set",
                                   f.offset, "dissect into another field", source)
            if any(p[:len(f.path)] == f.path and p != f.path or f.path[:len(p)] == p and p != f.path
                   for p in written):
                raise DissectError(f"field {f.name} is set both as a value and as an object", f.offset,
                                   "dissect the value into another field", source)
            written.setdefault(f.path, "string")
    for name, to in convert_datatype.items():
        path = field_path(name)
        if path not in written:
            raise DissectError(f"convert_datatype names '{name}', which no mapping sets", None,
                               "convert fields of the dissection (indirect fields' values stay text)", key=name)
        written[path] = CONVERSIONS[to]
    cols = columns_of(tuple(_Out(p, t) for p, t in written.items() if p[0] != "@metadata"))  # type: ignore[misc]
    if indirect:
        if indirect_field in cols:
            raise DissectError(f"indirect_field '{indirect_field}' is also a field of the dissection", None,
                               "name the map of indirect fields otherwise", key="indirect_field")
        cols[indirect_field] = "map<string,string>"
    return cols


def sets(d: Dissection) -> list[DissectField]:
    """The fields Logstash sets, in the order it sets them: normal, append (by `/n`), indirect (a stable sort)."""
    return sorted((f for f in d.fields if f.kind != "skip"), key=lambda f: f.ordinal)


def other_value(d: Dissection, values: list[str], f: DissectField) -> str:
    """Logstash's ValueResolver.getOtherByName: the value of the first other field of that name, else ''."""
    for g in d.fields:
        if g.index != f.index and g.name == f.name:
            return values[g.index]
    return ""


def convert(value: str, to: str) -> int | float | None:
    """convert_datatype: `int` as Logstash's BigDecimal(value).toBigInteger() (truncated), within a 64-bit integer;
    `float` as BigDecimal(value) read as a double (finite). None: it does not convert."""
    m = _NUMBER_RE.match(value)
    if m is None or m.group(1) is not None and abs(int(m.group(1))) > MAX_EXPONENT:
        return None
    d = Decimal(value)
    if to == "int":
        if d.adjusted() > 19:
            return None
        n = int(d)
        return n if -(1 << 63) <= n < (1 << 63) else None
    x = float(d) + 0.0  # no negative zero (BigDecimal has none)
    return x if x not in (float("inf"), float("-inf")) else None


@dataclass(frozen=True)
class Result:
    event: dict[str, object]  # the columns (a nested field as a dict)
    pairs: dict[str, str]  # the indirect fields' key -> value
    error: str | None  # the failure (the line goes to dead letters): None when it matched


def apply(mappings: Iterable[tuple[str, Dissection]], event: dict[str, object],
          convert_datatype: dict[str, str] | None = None, append_separator: str | None = None) -> Result:
    """The reference of the dissect transform on one row: `event` holds its input columns (a missing field is
    None). The mappings run in order, a later one may dissect a field an earlier one set. On the first failure
    the result carries its reason (the transform's dead letter)."""
    ev = dict(event)
    pairs: dict[str, str] = {}
    for source, d in mappings:
        text = _get(ev, field_path(source))
        if text is None:
            return Result(ev, pairs, f"field '{source}' is null")
        if not isinstance(text, str):
            return Result(ev, pairs, f"field '{source}' is not a string")
        values = d.values(text)
        if values is None:
            return Result(ev, pairs, f"field '{source}' is empty" if not text else "no match for dissect pattern")
        for f in sets(d):
            v = values[f.index]
            if f.kind == "normal":
                _put(ev, f.path, v)
            elif f.kind == "append":
                old = _get(ev, f.path)
                sep = f.join if append_separator is None else append_separator
                _put(ev, f.path, v if old is None else f"{old}{sep}{v}")
            else:
                found = _get(ev, f.path)
                key = other_value(d, values, f) if found is None else str(found)
                if key:
                    pairs.pop(key, None)
                    pairs[key] = v
    for name, to in (convert_datatype or {}).items():
        path = field_path(name)
        text = _get(ev, path)
        if text is None:
            continue
        got = convert(str(text), to)
        if got is None:
            return Result(ev, pairs, f"field '{name}': cannot convert '{text}' to {to}")
        _put(ev, path, got)
    return Result(ev, pairs, None)


def _get(ev: dict[str, object], path: tuple[str, ...]) -> object:
    cur: object = ev
    for k in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(k)
    return cur


def _put(ev: dict[str, object], path: tuple[str, ...], value: object) -> None:
    cur = ev
    for k in path[:-1]:
        nxt = cur.get(k)
        if not isinstance(nxt, dict):
            nxt = cur[k] = {}
        cur = nxt
    cur[path[-1]] = value
