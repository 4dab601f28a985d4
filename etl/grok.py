"""Grok pattern expansion, pure Python (no Spark, no pygrok import at run time).

``expand("%{COMBINEDAPACHELOG}")`` turns a Logstash-style grok pattern into one
regular expression in two dialects:

* ``python_regex``: for Python's ``re`` with ASCII (named groups ``(?P<field>...)``): ``\\w \\d \\s`` are
  ASCII as in Logstash's Oniguruma and in java.util.regex; POSIX brackets too (``[[:alpha:]]`` is Unicode in
  Logstash and in ``java_regex``: on non-ASCII text only the JVM's answer is Logstash's);
* ``java_regex``: the same regex for ``java.util.regex`` (Spark's
  ``regexp_extract(col, pattern, n)``): every named group becomes a plain
  group, backreferences become numbered, literal braces and nested ``[`` in
  character classes are escaped.

Both regexes have the same capturing groups in the same order, so the group
numbers in ``GrokPattern.fields`` are valid for both. Plain ``( ... )`` groups
inside pattern definitions become non-capturing (as in Logstash/Oniguruma,
where only named groups capture), so the only groups are the fields.

Semantics follow Logstash: ``%{NAME}`` matches without capture,
``%{NAME:field}`` captures, ``%{NAME:field:int|float}`` also converts;
nested patterns expand recursively and their own ``%{X:y}`` and ``(?<y>...)``
captures are captured too. A field name may occur more than once (e.g. in
alternatives such as ``HTTPD_ERRORLOG``): ``fields`` then holds one entry per
occurrence and a consumer takes the first non-null group (``GrokPattern.match``
does). Only the first occurrence is a named group in ``python_regex``; later
ones are named ``<field>__<n>`` (Python forbids duplicate names).

The bundled pattern files are Logstash's two current libraries (etl/grok_patterns:
``legacy``, the default, and ``ecs-v1``; scripts/grok_patterns.py extracts them
from Maven Central's elasticsearch-grok, ``library_version()`` names it); they are
read once per process. ``expand`` is cached.
"""
from __future__ import annotations

import difflib
import functools
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GrokError", "GrokField", "GrokPattern", "Leaf", "expand", "pattern_names", "bundled_patterns",
           "LIBRARIES", "library_version", "columns_of", "under", "combine", "markers", "convert", "SPARK_TYPES"]

FIELD_TYPES = ("string", "int", "float", "long", "double")  # long, double: Elasticsearch's copy of ecs-v1 writes
# them where Logstash's has int and float (etl reads them as bigint and double)
MAX_REGEX_CHARS = 200_000  # an expanded pattern longer than this is refused: 20x the largest bundled one
# (NETSCREENSESSIONLOG, 10,360); nested definitions that double at each level pass it in a few levels, and
# Python compiles a regex of this size in about 0.3 s
_NAME_RE = re.compile(r"[A-Za-z0-9_]+\Z")
_FIELD_RE = re.compile(r"[A-Za-z_@][A-Za-z0-9_@.\-]*\Z")
_REF_PART = r"[A-Za-z_@][A-Za-z0-9_@.\-]*"
_FIELD_REF_RE = re.compile(rf"(?:\[{_REF_PART}\])+\Z")  # a Logstash field reference: [a][b]
_INLINE_NAME = r"[A-Za-z_@\[][A-Za-z0-9_@.\-\[\]]*"  # (?<name>...) and (?<[a][b]>...)
_REF_RE = re.compile(r"%\{([^{}]*)\}")
_QUANT_RE = re.compile(r"\{(\d*)(,(\d*))?\}")
_GLOBAL_FLAGS_RE = re.compile(r"\(\?([aiLmsux]+)\)")
# POSIX brackets on ASCII (Oniguruma's, and Onigmo's in Logstash, on ASCII characters)
_POSIX = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
    "space": r"\t-\r ", "xdigit": "0-9A-Fa-f", "punct": r"!-/:-@\[-`{-~", "word": r"0-9A-Za-z_",
    "blank": r" \t", "cntrl": r"\x00-\x1f\x7f", "print": r"\x20-\x7e", "graph": r"\x21-\x7e", "ascii": r"\x00-\x7f",
}
# ... and on any character, in java.util.regex: Unicode-aware like Logstash's (Joni, Ruby syntax), where a POSIX
# bracket matches non-ASCII characters (while \w, \d, \s stay ASCII); xdigit is ASCII in both
_GRAPH_JAVA = r"[^\p{IsWhite_Space}\p{Cc}\p{Cs}\p{Cn}]"
_POSIX_JAVA = {
    "alpha": r"\p{IsAlphabetic}", "digit": r"\p{IsDigit}", "alnum": r"\p{IsAlphabetic}\p{IsDigit}",
    "upper": r"\p{IsUppercase}", "lower": r"\p{IsLowercase}", "space": r"\p{IsWhite_Space}",
    "xdigit": "0-9A-Fa-f", "punct": r"\p{IsPunctuation}\$+<=>\^`|~", "word": r"\p{IsAlphabetic}\p{M}\p{IsDigit}\p{Pc}",
    "blank": r"\p{Zs}\t", "cntrl": r"\p{Cc}", "print": _GRAPH_JAVA + r"\p{Zs}", "graph": _GRAPH_JAVA,
    "ascii": r"\x00-\x7f",
}
_POSIX_RE = re.compile(r"\[:(\^?)([a-z]+):\]")
# \b and \B as Logstash reads them (Onigmo: Unicode word characters: Alphabetic, marks, decimal digits, connector
# punctuation, join controls), whatever the JVM's own \b (Java 17: letters, digits, _; 19 and later: ASCII); the
# literal U+1F130 (a word character already) makes java.util.regex look behind by code point, not by UTF-16 unit
_WORD_JAVA = "[" + _POSIX_JAVA["word"] + "\\u200C\\u200D\U0001F130]"
_BOUNDS_JAVA = {"b": "(?:(?<=W)(?!W)|(?<!W)(?=W))".replace("W", _WORD_JAVA),
                "B": "(?:(?<=W)(?=W)|(?<!W)(?!W))".replace("W", _WORD_JAVA)}


@functools.cache
def _posix(name: str, negated: bool) -> tuple[str, str]:
    """Class items of POSIX bracket `name` (negated: ``[:^name:]``) for (the Python dialect, java.util.regex)."""
    if not negated:
        return _POSIX[name], _POSIX_JAVA[name]
    inside = re.compile(f"[{_POSIX[name]}]")
    out, k = [], 0
    for c in range(128):  # the complement of the ASCII set, up to the last code point
        if inside.match(chr(c)):
            if k < c:
                out.append(f"\\x{k:02x}-\\x{c - 1:02x}")
            k = c + 1
    out.append(f"\\x{k:02x}-\\U0010ffff")
    return "".join(out), "[^" + _POSIX_JAVA[name] + "]"


class GrokError(ValueError):
    """A grok pattern cannot be expanded: unknown pattern name, bad field, bad regex."""

    def __init__(self, message: str, name: str | None = None, suggestions: tuple[str, ...] = (),
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.name = name
        self.suggestions = tuple(suggestions)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class GrokField:
    name: str  # as written: 'client', 'a.b', '[a][b]'
    type: str  # FIELD_TYPES
    group: int  # group number in java_regex (and python_regex)
    path: tuple[str, ...] = field(default=(), compare=False)  # where the value goes: ('c',), ('a.b',), ('a', 'b')
    alts: tuple[tuple[int, int], ...] = field(default=(), compare=False)  # (alternation, branch) of each group
    # around the capture

    def exclusive(self, other: GrokField) -> bool:
        """Can the two never both take part in one match? (they lie in different branches of one alternation)"""
        mine = dict(self.alts)
        return any(a in mine and mine[a] != b for a, b in other.alts)


@dataclass(frozen=True)
class GrokPattern:
    pattern: str
    python_regex: str
    java_regex: str
    fields: tuple[GrokField, ...]
    _compiled: re.Pattern = field(repr=False, compare=False, default=None)  # type: ignore[arg-type]
    _pieces: tuple[str, ...] = field(repr=False, compare=False, default=())  # the reference's regex, in pieces

    @property
    def captures(self) -> tuple[tuple[str, str], ...]:
        """Distinct captures (the transform's new columns) in first-occurrence order: (name, type)."""
        seen: dict[str, str] = {}
        for f in self.fields:
            seen.setdefault(f.name, f.type)
        return tuple(seen.items())

    @property
    def regex(self) -> re.Pattern:
        """The reference's regex on ASCII text (``match`` reads other text with ``_unicode``)."""
        return self._compiled

    def search(self, text: str) -> re.Match | None:
        """The reference's search: Logstash's match of the regex on `text` (its groups: ``fields``' groups)."""
        return (self._compiled if text.isascii() else self._unicode).search(text)

    @functools.cached_property
    def _unicode(self) -> re.Pattern:
        """The reference's regex for non-ASCII text: its word boundaries are Unicode's (``_UNICODE_BOUNDS``)."""
        w = _word_class()
        source = "".join(_UNICODE_BOUNDS[p].replace("W", w) if p in _UNICODE_BOUNDS else p for p in self._pieces)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(source, _REFERENCE_FLAGS)

    def outputs(self, columns: dict[str, str] | None = None, overwrite: tuple[str, ...] = ()) -> tuple[Leaf, ...]:
        """Where each capture goes, as Logstash's grok sets fields (see ``Leaf``). `columns`: the input's
        columns that stay (name -> Spark SQL type); `overwrite`: Logstash's option of that name."""
        return _outputs(self.fields, tuple((columns or {}).items()), tuple(overwrite))

    def match(self, text: str, event: dict[str, object] | None = None,
              overwrite: tuple[str, ...] = (), keep_empty: bool = False) -> dict[str, object] | None:
        """Search ``text``; None when it does not match, else the output columns as the transform gives them
        (``outputs``): {column: value}, a nested column as a dict (None when none of its fields has a value).
        `event`: the input's columns that stay (their values; a string one captured again becomes a list).
        A value that does not convert becomes None (the transform makes such a line a dead letter).
        `keep_empty`: Logstash's keep_empty_captures (an empty capture of a string field is '')."""
        m = self.search(text)
        marks = markers(self)
        if m is None or (marks and all(m.group(self.fields[i].group) is None for i in marks)):
            return None
        event = event or {}
        values = []
        for f in self.fields:
            v = m.group(f.group)  # an empty capture is no value (keep_empty_captures => false)
            v = v if v or (v == "" and keep_empty and f.type == "string") else None
            values.append(None if v is None else convert(v, f.type))
        out: dict[str, object] = {}
        types = {k: _py_type(v) for k, v in event.items()}
        for leaf in self.outputs(types, overwrite):
            got = [values[i] for i in leaf.indices if values[i] is not None]
            old = event.get(leaf.path[0]) if leaf.mode == "append" or (
                leaf.mode == "last" and types.get(leaf.path[0]) == leaf.spark_type) else None
            if leaf.mode in ("first", "replace"):
                v = got[0] if got else None
            elif leaf.mode == "last":
                v = got[-1] if got else old
            else:
                items = ([] if old is None else list(old) if isinstance(old, list) else [old]) + [
                    str(x) if leaf.mode == "append" else x for x in got]
                v = items or None
            _put(out, leaf.path, v)
        return _prune(out)


_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*\Z")
_BITS = {"int": 31, "long": 63}


def convert(value: str, typ: str) -> object:
    """A captured text as `typ` (int, long: an integer of 32 / 64 bits; float, double: a number), None when it is
    not one (as Spark's try_cast: an integer past its type's range, `1_000` are none)."""
    if typ in _BITS:
        if not _INTEGER.match(value):
            return None
        n = int(value)
        return n if -2 ** _BITS[typ] <= n < 2 ** _BITS[typ] else None
    try:
        return value if typ == "string" else float(value)
    except ValueError:
        return None


SPARK_TYPES = {"string": "string", "int": "int", "float": "float", "long": "bigint", "double": "double"}


@dataclass(frozen=True)
class Leaf:
    """One output value of a grok transform, as Logstash's grok sets a field (its `handle`): every capture
    of the field with a value (non-empty), in the regex's order, goes to it:

    * ``first``: the field is captured once, or only in different branches of one alternation (so at most one
      capture takes part): its value;
    * ``array``: captured more than once where several can take part: the list of values (Logstash's array;
      a single value is a list of one here, the column's type being fixed);
    * ``append``: the input has a string (or list) column of that name: the list of its value and the
      captures' (as text);
    * ``replace``: the input has a column of that name of another type: the captures replace it as ``first``
      (Logstash appends only to a string or a list and drops such a capture; validate warns, W304);
    * ``last``: the field is in `overwrite`: the last capture's value, else the input's (when the input's
      column has the captures' type; else None).

    A path of more than one name is a nested field ([a][b] or, in the ecs-v1 library, a.b): a struct column
    (None when none of its fields has a value). Fields under [@metadata] are never output (Logstash's
    @metadata is not part of the event)."""
    path: tuple[str, ...]
    type: str  # FIELD_TYPES: the captures' conversion
    mode: str  # first | array | append | replace | last
    indices: tuple[int, ...]  # positions in GrokPattern.fields (and in the captures array)
    spark_type: str  # of the value: 'int', 'array<string>', ...


@functools.lru_cache(maxsize=1024)
def _outputs(fields: tuple[GrokField, ...], columns: tuple[tuple[str, str], ...],
             overwrite: tuple[str, ...]) -> tuple[Leaf, ...]:
    cols = dict(columns)
    by_path: dict[tuple[str, ...], list[int]] = {}
    for i, f in enumerate(fields):
        if f.path[0] != "@metadata":
            by_path.setdefault(f.path, []).append(i)
    leaves = []
    for path, idx in by_path.items():
        fs = [fields[i] for i in idx]
        typ = fs[0].type
        if any(f.type != typ for f in fs):
            raise GrokError(f"grok: field {fs[0].name!r} is captured as {typ} and as "
                            f"{next(f.type for f in fs if f.type != typ)}", fs[0].name)
        base = SPARK_TYPES[typ]
        old = cols.get(path[0]) if len(path) == 1 else None
        if len(path) > 1 and path[0] in cols:
            raise GrokError(f"grok: nested field {fs[0].name!r} goes into column {path[0]!r}, which the input has",
                            fs[0].name, hint="rename the input column, or capture into another field")
        if fs[0].name in overwrite or ".".join(path) in overwrite:
            leaves.append(Leaf(path, typ, "last", tuple(idx), base))
        elif old is not None:
            if old in ("string", "array<string>"):
                leaves.append(Leaf(path, typ, "append", tuple(idx), "array<string>"))
            else:
                leaves.append(Leaf(path, typ, "replace", tuple(idx), base))
        elif any(not a.exclusive(b) for k, a in enumerate(fs) for b in fs[k + 1:]):
            leaves.append(Leaf(path, typ, "array", tuple(idx), f"array<{base}>"))
        else:
            leaves.append(Leaf(path, typ, "first", tuple(idx), base))
    tops: dict[str, bool] = {}
    for leaf in leaves:  # a field cannot be a value and hold fields at once
        nested = len(leaf.path) > 1
        if tops.setdefault(leaf.path[0], nested) != nested or any(
                other.path[:len(leaf.path)] == leaf.path and other is not leaf for other in leaves):
            raise GrokError(f"grok: field {'.'.join(leaf.path)!r} is captured both as a value and as an object",
                            hint="capture the value into another field")
    return tuple(leaves)


def columns_of(leaves: tuple[Leaf, ...]) -> dict[str, str]:
    """The output columns of `leaves`, in order: name -> Spark SQL type (a struct for nested fields)."""
    tree: dict[str, object] = {}
    for leaf in leaves:
        _put(tree, leaf.path, leaf.spark_type)

    def ddl(node: object) -> str:
        if isinstance(node, dict):
            return "struct<" + ",".join(f"{quote(k)}:{ddl(v)}" for k, v in node.items()) + ">"
        return str(node)

    return {k: ddl(v) for k, v in tree.items()}


def under(leaves: tuple[Leaf, ...], target: str) -> tuple[Leaf, ...]:
    """`leaves` moved into column `target` (Logstash's target: every capture a field of one struct)."""
    from dataclasses import replace

    return tuple(replace(leaf, path=(target, *leaf.path)) for leaf in leaves)


def quote(name: str) -> str:
    """A field name as Spark SQL's DDL writes it (backquoted unless it is a plain identifier)."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"


def _put(tree: dict, path: tuple[str, ...], value: object) -> None:
    for k in path[:-1]:
        tree = tree.setdefault(k, {})
    tree[path[-1]] = value


def _prune(tree: dict) -> dict:
    """Nested dicts whose values are all None become None (a struct column without a value)."""
    out: dict[str, object] = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            v = _prune(v)
            v = v if any(x is not None for x in v.values()) else None
        out[k] = v
    return out


def _py_type(v: object) -> str:
    return "string" if isinstance(v, str) or v is None else "array<string>" if isinstance(v, list) else "other"


# --------------------------------------------------------------------------- patterns

LIBRARIES = ("legacy", "ecs-v1")  # Logstash's two pattern sets (ecs_compatibility => disabled | v1)
_LIBRARY_DIR = Path(__file__).resolve().parent / "grok_patterns"  # scripts/grok_patterns.py fills it


@functools.cache
def library_version() -> str:
    """The artifact the bundled libraries come from, e.g. 'org.elasticsearch:elasticsearch-grok:8.17.0'."""
    return (_LIBRARY_DIR / "VERSION").read_text(encoding="utf-8").strip()


def parse_pattern_text(text: str) -> dict[str, str]:
    """Parse a grok pattern file (``NAME regex`` per line, ``#`` comments). As Logstash's loader (jls-grok:
    ``line.gsub(/^\\s*/, "").split(/\\s+/, 2)``, then chomp), the regex keeps its trailing blanks: legacy
    REDISLOG ends with a space."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        name, _, body = re.sub(r"\s+", " ", line, count=1).partition(" ")
        if body.strip():
            out[name] = body
    return out


@functools.cache
def bundled_patterns(library: str = "legacy") -> dict[str, str]:
    """The definitions of one bundled library (LIBRARIES), NAME -> regex (read once per process). As in
    Logstash, the files are read in name order and a later definition of a name replaces an earlier one."""
    if library not in LIBRARIES:
        raise GrokError(f"grok: unknown pattern library {library!r} (legacy or ecs-v1)", library)
    out: dict[str, str] = {}
    for f in sorted((_LIBRARY_DIR / library).iterdir()):
        out.update(parse_pattern_text(f.read_text(encoding="utf-8")))
    return out


def pattern_names(custom: dict[str, str] | None = None, library: str = "legacy") -> list[str]:
    names = set(bundled_patterns(library))
    if custom:
        names.update(custom)
    return sorted(names)


def _suggest(name: str, names) -> tuple[str, ...]:
    upper = {n.upper(): n for n in names}
    if name.upper() in upper and upper[name.upper()] != name:
        return (upper[name.upper()],)
    return tuple(upper[s] for s in difflib.get_close_matches(name.upper(), list(upper), n=3, cutoff=0.6))


# --------------------------------------------------------------------------- expansion

class _Emitter:
    def __init__(self, defs: dict[str, str], top: str):
        self.defs = defs
        self.top = top
        self.py: list[str] = []
        self.java: list[str] = []
        self.ref: list[str] = []  # the reference's regex (GrokPattern.match): Logstash's meaning on any text
        self.fields: list[GrokField] = []
        self.py_names: dict[str, int] = {}  # python group name -> group number
        self.py_name_of: dict[int, str] = {}  # group number -> python group name
        self.next_k: dict[str, int] = {}  # base name -> next suffix to try (linear in repeated captures)
        self.by_name: dict[str, list[int]] = {}  # field name -> group numbers (for backrefs)
        self.groups = 0
        self.flags: list[str] = []
        self.stack: tuple[str, ...] = ()
        self.size = 0  # characters emitted so far (python dialect)
        self.alts: list[list[int]] = [[0, 0]]  # per open group: [its id, the branch being emitted]
        self.next_alt = 1
        self.dotted: set[str] = set()  # definitions whose dotted field names are paths (bundled ecs-v1)
        self.unnamed = False  # named_captures_only false: %{NAME} captures into NAME

    def push(self) -> None:
        self.alts.append([self.next_alt, 0])
        self.next_alt += 1

    def pop(self) -> None:
        if len(self.alts) > 1:  # an unbalanced ')' is the regex compiler's to report
            self.alts.pop()

    def path_of(self, name: str) -> tuple[str, ...]:
        if _FIELD_REF_RE.match(name):
            return tuple(name[1:-1].split("]["))
        if self.stack and self.stack[-1] in self.dotted:
            return tuple(name.split("."))
        return (name,)

    @property
    def ctx(self) -> str:
        """Where an error is: the definition being expanded, or the user's pattern."""
        return f"definition of {self.stack[-1]}" if self.stack else repr(self.top)

    def both(self, s: str, j: str | None = None, r: str | None = None) -> None:
        self.size += len(s)
        if self.size > MAX_REGEX_CHARS:  # stop as soon as the cap is passed: expansion stays fast
            top = self.stack[0] if self.stack else None
            raise GrokError(f"grok: pattern expands to more than {MAX_REGEX_CHARS:,} characters"
                            + (f" (through %{{{top}}})" if top else ""), top,
                            hint="a definition that uses another one twice doubles at each level: "
                                 "define the repeated part once, or write the regex directly")
        self.py.append(s)
        self.java.append(s if j is None else j)
        self.ref.append(s if r is None else r)

    def open_capture(self, name: str, typ: str) -> None:
        if not (_FIELD_RE.match(name) or _FIELD_REF_RE.match(name)):
            raise GrokError(f"grok: invalid field name {name!r} in {self.ctx} (letters, digits, '_', '@', '.', '-'; "
                            f"or a field reference such as [a][b])", name)
        self.groups += 1
        n = self.groups
        self.fields.append(GrokField(name, typ, n, self.path_of(name), tuple((a, b) for a, b in self.alts)))
        self.by_name.setdefault(name, []).append(n)
        base = re.sub(r"\W", "_", name)
        if base[0].isdigit():
            base = "_" + base
        pyname = base
        k = self.next_k.get(base, 2)
        while pyname in self.py_names:
            pyname = f"{base}__{k}"
            k += 1
        self.next_k[base] = k
        self.py_names[pyname] = n
        self.py_name_of[n] = pyname
        self.both(f"(?P<{pyname}>", "(")
        self.push()

    def backref(self, name: str) -> None:
        groups = self.by_name.get(name)
        if not groups:
            raise GrokError(f"grok: backreference to unknown group {name!r} in {self.ctx}", name)
        n = groups[0]
        pyname = self.py_name_of[n]
        self.both(f"(?P={pyname})", f"(?:\\{n})")

    # one regex body (a definition or the user's pattern); `stack` detects cycles
    def emit(self, body: str, stack: tuple[str, ...]) -> None:
        outer = self.stack
        self.stack = stack
        try:
            self._emit(body, stack)
        finally:
            self.stack = outer

    def _emit(self, body: str, stack: tuple[str, ...]) -> None:
        i, n = 0, len(body)
        while i < n:
            c = body[i]
            if c == "\\":
                i = self._escape(body, i)
            elif c == "[":
                i = self._char_class(body, i)
            elif c == "%" and body.startswith("%{", i):
                m = _REF_RE.match(body, i)
                if m is None:  # no closing brace: a literal '%{'
                    self.both("%\\{")
                    i += 2
                    continue
                self._reference(m.group(1), stack)
                i = m.end()
            elif c == "(":
                i = self._group(body, i)
            elif c == "{":
                m = _QUANT_RE.match(body, i)
                if m and (m.group(1) or m.group(3)):
                    lo, hi = m.group(1), m.group(3)
                    if m.group(2) is None:
                        self.both("{" + lo + "}")
                    else:
                        self.both("{" + (lo or "0") + "," + (hi or "") + "}")
                    i = m.end()
                else:
                    self.both("\\{")
                    i += 1
            elif c == "}":
                self.both("\\}")
                i += 1
            elif c == "|":
                self.alts[-1][1] += 1
                self.both(c)
                i += 1
            elif c == ")":
                self.pop()
                self.both(c)
                i += 1
            elif c == "^":  # Ruby's: at the start, and after a \n that does not end the text
                self.both(c, "(?:\\A|^)", "(?:\\A|(?<=\\n)(?!\\Z))")  # Java's multi-line ^ fails on ''
                i += 1
            elif c == "?" and body.startswith("?*", i) and i > 0 and body[i - 1] not in "(\\":
                self.both("*")  # Oniguruma 'x?*' == 'x*'; Python and Java reject it
                i += 2
            else:
                self.both(c)
                i += 1

    def _escape(self, body: str, i: int) -> int:
        if i + 1 >= len(body):
            raise GrokError(f"grok: pattern ends with a lone backslash in {self.ctx}")
        nxt = body[i + 1]
        if nxt.isdigit() and nxt != "0":
            raise GrokError(f"grok: numbered backreference \\{nxt} is not supported (use (?<name>...) and \\k<name>) in {self.ctx}")
        if nxt == "k" and i + 2 < len(body) and body[i + 2] == "<":
            end = body.find(">", i + 3)
            if end < 0:
                raise GrokError(f"grok: unterminated \\k<name> in {self.ctx}")
            self.backref(body[i + 3:end])
            return end + 1
        if nxt in "pP" and i + 2 < len(body) and body[i + 2] == "{":
            end = body.find("}", i + 3)
            if end < 0:
                raise GrokError(f"grok: unterminated \\{nxt}{{...}} in {self.ctx}")
            self.both(body[i:end + 1])
            return end + 1
        if nxt == "z":  # absolute end of input: Python spells it \Z
            self.both("\\Z", "\\z")
            return i + 2
        if nxt == "Z":  # Ruby's and Java's (UNIX_LINES) \Z: at the end, or before a \n that ends the text
            self.both("\\Z", "\\Z", "(?=\\n?\\Z)")
            return i + 2
        if nxt in "bB":  # the reference's piece stays \b (read as Unicode's on non-ASCII text: _UNICODE_BOUNDS)
            self.both(body[i:i + 2], _BOUNDS_JAVA[nxt])
            return i + 2
        if nxt in "hH":  # Oniguruma hex digit (Java's \h is horizontal space)
            self.both("[0-9a-fA-F]" if nxt == "h" else "[^0-9a-fA-F]")
            return i + 2
        self.both(body[i:i + 2])
        return i + 2

    def _char_class(self, body: str, i: int) -> int:
        neg, py, java, end = self._class_body(body, i + 1)
        self.both("[" + "^" * neg + py + "]", "[" + "^" * neg + java + "]")
        return end

    def _class_body(self, body: str, j: int) -> tuple[bool, str, str, int]:
        """The class whose body starts at `j` (after its '['): (negated, python items, java items, end).

        As in Oniguruma, a class inside a class is a union (``[[[:alnum:]]_%]``: alphanumerics, '_' or '%'),
        and a POSIX bracket is Unicode-aware in java.util.regex (``_POSIX_JAVA``) and exact on ASCII in the
        Python dialect (``_POSIX``: read on ASCII lines only, by etl/grokvm)."""
        py: list[str] = []
        java: list[str] = []
        neg = j < len(body) and body[j] == "^"
        j += neg
        if j < len(body) and body[j] == "]":
            py.append("\\]")
            java.append("\\]")
            j += 1
        while j < len(body):
            c = body[j]
            if c == "\\" and j + 1 < len(body) and body[j + 1] == "h":
                py.append("0-9a-fA-F")
                java.append("0-9a-fA-F")
                j += 2
                continue
            if c == "\\" and j + 1 < len(body):
                py.append(body[j:j + 2])
                java.append(body[j:j + 2])
                j += 2
                continue
            if c == "]":
                return neg, "".join(py), "".join(java), j + 1
            if c == "[":
                m = _POSIX_RE.match(body, j)
                if m and m.group(2) in _POSIX:
                    p, jv = _posix(m.group(2), bool(m.group(1)))
                    py.append(p)
                    java.append(jv)
                    j = m.end()
                    continue
                if body.startswith("[:", j):  # '[:' not a POSIX bracket: literal, as in Oniguruma
                    py.append("\\[")
                    java.append("\\[")
                    j += 1
                    continue
                ineg, ipy, ijava, j = self._class_body(body, j + 1)
                if ineg:
                    raise GrokError(f"grok: a negated class inside a class ('[^' after '[') is not supported in "
                                    f"{self.ctx}", hint="write the negation on the outer class")
                py.append(ipy)
                java.append(ijava)
                continue
            if c == "&" and body.startswith("&&", j):
                raise GrokError(f"grok: class intersection '&&' (Oniguruma) is not supported in {self.ctx}",
                                hint="write the intersection out as one class")
            if c in "|~" and body.startswith(c + c, j):  # Python set-op warnings
                py.append(f"\\{c}\\{c}")
                java.append(f"\\{c}\\{c}")
                j += 2
                continue
            py.append(c)
            java.append(c)
            j += 1
        raise GrokError(f"grok: unterminated character class in {self.ctx}")

    def _group(self, body: str, i: int) -> int:
        if not body.startswith("(?", i):
            self.both("(?:")  # plain groups do not capture (only named ones do)
            self.push()
            return i + 1
        m = re.compile(rf"\(\?P?<({_INLINE_NAME})>").match(body, i)
        if m:
            self.open_capture(m.group(1), "string")
            return m.end()
        m = re.compile(r"\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)").match(body, i)
        if m:
            self.backref(m.group(1))
            return m.end()
        if body.startswith("(?#", i):
            end = body.find(")", i)
            if end < 0:
                raise GrokError(f"grok: unterminated comment in {self.ctx}")
            return end + 1
        m = _GLOBAL_FLAGS_RE.match(body, i)
        if m:  # global inline flags: Python wants them at the start; hoist for both
            self.flags.append(m.group(1))
            return m.end()
        if body.startswith("(?P", i):
            raise GrokError(f"grok: unsupported group syntax at {body[i:i + 8]!r} in {self.ctx}")
        self.both("(?")
        self.push()
        return i + 2

    def _reference(self, inner: str, stack: tuple[str, ...]) -> None:
        parts = inner.split(":")
        if len(parts) > 3:
            raise GrokError(f"grok: %{{{inner}}} has too many ':' parts (use %{{NAME:field:type}})", inner)
        name = parts[0]
        fname = parts[1] if len(parts) > 1 else None
        ftype = parts[2] if len(parts) > 2 else None
        if not _NAME_RE.match(name):
            raise GrokError(f"grok: invalid pattern name {name!r} in %{{{inner}}}", name)
        if name not in self.defs:
            sugg = _suggest(name, self.defs)
            hint = f" (did you mean {', '.join(sugg)}?)" if sugg else ""
            raise GrokError(f"grok: unknown pattern %{{{name}}}{hint}", name, sugg)
        if name in stack:
            raise GrokError(f"grok: recursive pattern definition: {' -> '.join(stack + (name,))}", name)
        if fname is not None and not (_FIELD_RE.match(fname) or _FIELD_REF_RE.match(fname)):
            raise GrokError(f"grok: invalid field name {fname!r} in %{{{inner}}} (letters, digits, '_', '@', '.', "
                            f"'-'; or a field reference such as [a][b])", name)
        if ftype is not None and ftype not in FIELD_TYPES:
            sugg = tuple(difflib.get_close_matches(ftype, FIELD_TYPES, n=1, cutoff=0.3))
            raise GrokError(f"grok: unknown type {ftype!r} in %{{{inner}}} (int, float, long, double or string)",
                            ftype, sugg)
        if fname is None and self.unnamed:
            fname = name  # Logstash's named_captures_only => false: the pattern's name is the field's
        if fname is None:
            self.both("(?:")
            self.push()
        else:
            self.open_capture(fname, ftype or "string")
        self.emit(self.defs[name], stack + (name,))
        self.pop()
        self.both(")")


@functools.lru_cache(maxsize=1024)
def _expand_cached(pattern: str, custom_items: tuple[tuple[str, str], ...], library: str,
                   named_captures_only: bool) -> GrokPattern:
    defs = bundled_patterns(library)
    if custom_items:
        defs = {**defs, **dict(custom_items)}
    em = _Emitter(defs, pattern)
    em.unnamed = not named_captures_only
    if library == "ecs-v1":  # Elasticsearch's copy writes Logstash's [a][b] as a.b: a path in its definitions
        em.dotted = set(bundled_patterns(library)) - {k for k, _ in custom_items}
    em.emit(pattern, ())
    flags = "".join(dict.fromkeys("".join(em.flags)))
    prefix = f"(?{flags})" if flags else ""
    py = prefix + "".join(em.py)
    java = prefix + "".join(em.java)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = re.compile(prefix + "".join(em.ref), _REFERENCE_FLAGS)
    except (re.error, OverflowError, RecursionError) as e:
        raise GrokError(f"grok: pattern {pattern!r} does not compile: {e}") from None
    if compiled.groups != em.groups:  # pragma: no cover - emitter invariant
        raise GrokError(f"grok: internal group count mismatch for {pattern!r}")
    return GrokPattern(pattern, py, java, tuple(em.fields), compiled, (prefix, *em.ref))


# The reference's flags: Logstash compiles grok with Regexp::MULTILINE ('.' takes a \n; Ruby's ^ $ are always line
# anchors: ^ is spelled out by the emitter, $ is Python's multi-line one, before any \n and at the end); \w \d \s
# are ASCII (Onigmo's Ruby syntax, as in java.util.regex) and so is \b on ASCII text, where it is Unicode's.
_REFERENCE_FLAGS = re.ASCII | re.DOTALL | re.MULTILINE
# ... and on non-ASCII text \b is Unicode's (Onigmo: a word character is Alphabetic, a mark, a decimal digit, a
# connector punctuation or a join control), spelled with lookarounds over that class (W: _word_class())
_UNICODE_BOUNDS = {"\\b": "(?:(?<=W)(?!W)|(?<!W)(?=W))", "\\B": "(?:(?<=W)(?=W)|(?<!W)(?!W))"}  # as _BOUNDS_JAVA


@functools.lru_cache(maxsize=1)
def _word_class() -> str:
    """Onigmo's Unicode word characters as one Python class: L, Nl, M, Nd, Pc, U+200C-U+200D and the symbols of
    Other_Alphabetic (circled and squared letters), from this Python's Unicode data."""
    import unicodedata

    extra = [(0x200C, 0x200D), (0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189)]
    keep = {cp for a, b in extra for cp in range(a, b + 1)}
    runs: list[list[int]] = []
    for cp in range(0x110000):
        cat = unicodedata.category(chr(cp))
        if cat[0] in "LM" or cat in ("Nd", "Nl", "Pc") or cp in keep:
            if runs and runs[-1][1] == cp - 1:
                runs[-1][1] = cp
            else:
                runs.append([cp, cp])
    return "[" + "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in runs) + "]"


MATCHED = "[@metadata][_etl_matched{}]"  # combine's marker captures (never output: @metadata)


def combine(patterns: str | list[str] | tuple[str, ...], break_on_match: bool = True) -> str:
    """Logstash's several patterns for one field as one pattern. `break_on_match` true: the first pattern (in
    order) that matches anywhere in the line gives the fields, as Logstash searches each in turn
    (``^(?:[\\s\\S]*?(?:p1)|[\\s\\S]*?(?:p2))``: branch 1 tries every start before branch 2 is tried); false:
    every pattern searched on its own from the line's start (an atomic lookahead each, optional), each one that
    matches adding its fields, with an empty marker capture (MATCHED) per pattern: a line matches when one of
    them took part (``GrokPattern.match``, the transform's build). One pattern is itself."""
    items = [patterns] if isinstance(patterns, str) else list(patterns)
    if len(items) == 1:
        return items[0]
    if break_on_match:
        return "^(?:" + "|".join(f"[\\s\\S]*?(?:{p})" for p in items) + ")"
    return "^" + "".join(f"(?:(?=[\\s\\S]*?(?:{p})(?<{MATCHED.format(k)}>))|)" for k, p in enumerate(items, 1))


def markers(g: GrokPattern) -> tuple[int, ...]:
    """Positions in g.fields of combine's marker captures (empty: a line matches when the regex does)."""
    prefix = MATCHED.split("{")[0]
    return tuple(i for i, f in enumerate(g.fields) if f.name.startswith(prefix))


def expand(pattern: str, custom: dict[str, str] | None = None, library: str = "legacy",
           named_captures_only: bool = True) -> GrokPattern:
    """Expand a grok pattern with the definitions of `library` (LIBRARIES) and `custom` ones (which replace
    bundled ones of the same name); raise GrokError for unknown names or bad regexes. `named_captures_only`
    False: ``%{NAME}`` captures into field NAME too (Logstash's option of that name)."""
    items = tuple(sorted(custom.items())) if custom else ()
    try:
        return _expand_cached(pattern, items, library, named_captures_only)
    except RecursionError:
        raise GrokError(f"grok: pattern {pattern!r} nests too deeply") from None
