"""Python ``re`` patterns -> Hyperscan expressions with the same ``re.search`` meaning.

The reference meaning of every pattern predicate is ``re.search(regex, value,
flags)`` on the (derived) text value. Hyperscan speaks PCRE over UTF-8 bytes,
which differs from Python ``re`` in many corners (``\\Z``, ``^`` in multiline
mode after a final newline, Unicode ``\\w``/``\\d``/``\\s``, Unicode case
folding, empty matches). So the pattern is not passed through: it is parsed with
Python's own parser and re-emitted construct by construct:

* every character class (``.``, ``[...]``, ``\\d``, a caseless letter ...) becomes
  the exact set of code points Python matches (Python's category tables and
  case folding, precomputed in :mod:`etl.regexes.ucd`; Python itself is asked
  about the code points case folding can affect), written as explicit ranges;
  huge Unicode sets keep their ASCII part exact and accept every non-ASCII code
  point (a superset: reports on non-ASCII values are confirmed with ``re``);
* anchors map to their Hyperscan equivalents (``\\Z`` -> ``\\z``, ...);
* ``\\b``/``\\B`` use Hyperscan's ASCII word boundary, exact on ASCII values;
  on other values Python ``re`` decides;
* constructs Hyperscan lacks (lookaround, backreferences, conditionals, atomic
  groups, possessive repeats) are replaced by a superset (the assertion is
  dropped, a backreference becomes its group), and every report is confirmed
  with ``re`` (a Hyperscan prefilter);
* a pattern that can match the empty string without any assertion matches every
  value (``always``); one that can only match empty at some positions is left to
  Python ``re`` entirely.

When Hyperscan still rejects the exact expression, :func:`translate` with
``relax=True`` gives a superset without anchors and with capped repeats; if
that fails too the pattern runs in Python ``re`` (see the fallback pass).
"""

from __future__ import annotations

import re
import re._constants as C  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from dataclasses import dataclass, replace
from functools import lru_cache
from collections.abc import Iterable

import _sre
import hyperscan

from etl.regexes.ucd import fold_string
from etl.regexes.ucd import tables as ucd_tables
from etl.workercache import WorkerCache

MAX_CP = 0x10FFFF
ASCII_MAX = 0x7F
NONASCII_RANGE_LIMIT = 3  # more non-ASCII ranges than this -> superset class (Unicode \s, \d, \w ...)
RELAX_REPEAT_CAP = 200

# ASCII letters Hyperscan's caseless mode also folds to non-ASCII characters (Kelvin sign, long s);
# i is here for safety (Turkish dotted/dotless i)
_HS_FOLDS_BEYOND_ASCII = "ksi"

HS_BASE_FLAGS = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SINGLEMATCH

Ranges = tuple[tuple[int, int], ...]

# plain ints: RegexFlag arithmetic is slow in the hot translation loop
_I, _S, _M, _A = int(re.IGNORECASE), int(re.DOTALL), int(re.MULTILINE), int(re.ASCII)


@dataclass(frozen=True)
class Translation:
    """Outcome of translating one Python pattern.

    ``expression`` is None when the pattern cannot be handed to Hyperscan at all
    (``reason`` says why) or when it matches every value (``always``).
    """

    expression: str | None
    flags: int
    ascii_rows: str = "exact"  # exact | confirm
    other_rows: str = "exact"  # exact | confirm | python
    always: bool = False
    notes: tuple[str, ...] = ()
    reason: str | None = None

    @property
    def exact(self) -> bool:
        return self.ascii_rows == "exact" and self.other_rows == "exact"


# --------------------------------------------------------------------------- code point sets


def _merge(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        elif out and out[-1][1] == 0xD7FF and lo == 0xE000:  # surrogates never occur in UTF-8
            out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out if not (a >= 0xD800 and b <= 0xDFFF))


def _from_chars(chars: Iterable[str]) -> Ranges:
    return _merge((ord(c), ord(c)) for c in chars)


def complement(ranges: Ranges) -> Ranges:
    out = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return _merge(out)


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


@lru_cache(maxsize=4096)
def _fold_matches(atom: str, flags: int) -> Ranges:
    """The ``fold`` code points (see :mod:`etl.regexes.ucd`) a one-character pattern matches, asking Python."""
    return _from_chars(re.findall(atom, fold_string(), flags))


_CATEGORY_TABLE = {
    C.CATEGORY_DIGIT: ("digit", False), C.CATEGORY_NOT_DIGIT: ("digit", True),
    C.CATEGORY_SPACE: ("space", False), C.CATEGORY_NOT_SPACE: ("space", True),
    C.CATEGORY_WORD: ("word", False), C.CATEGORY_NOT_WORD: ("word", True),
}


def category_ranges(cat, flags: int) -> Ranges:
    name, negated = _CATEGORY_TABLE[cat]
    rs = ucd_tables()[("ascii_" if flags & _A else "") + name]
    return complement(rs) if negated else rs


_CATEGORY_SRC = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s", C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}


def _u(c: int) -> str:
    return f"\\U{c:08x}"


def class_ranges(items: list, flags: int) -> Ranges:
    """Exact code point set of a parsed ``[...]`` (IN) under ``flags``.

    Case-sensitively a class is the union of its items (negated with ``^``):
    set algebra over the category tables of :mod:`etl.regexes.ucd`. With
    IGNORECASE only the ``fold`` code points can answer differently, so Python
    itself is asked about those few thousand and the case-sensitive answer
    holds everywhere else."""
    negate = bool(items) and items[0][0] is C.NEGATE
    body = items[1:] if negate else items
    parts: list[tuple[int, int]] = []
    for op, av in body:
        if op is C.LITERAL:
            parts.append((av, av))
        elif op is C.RANGE:
            parts.append(av)
        elif op is C.CATEGORY:
            parts.extend(category_ranges(av, flags))
        else:  # pragma: no cover - parser does not produce others inside a class
            raise ValueError(f"unsupported class item {op}")
    rs = _merge(parts)
    if negate:
        rs = complement(rs)
    if not flags & _I:
        return rs
    src = ["[", "^" if negate else ""]
    for op, av in body:
        if op is C.LITERAL:
            src.append(_u(av))
        elif op is C.RANGE:
            src.append(_u(av[0]) + "-" + _u(av[1]))
        else:
            src.append(_CATEGORY_SRC[av])
    src.append("]")
    fold = ucd_tables()["fold"]
    inside = _fold_matches("".join(src), flags & (_I | _A))
    return _merge(_intersect(rs, complement(fold)) + inside)


@lru_cache(maxsize=4096)
def _caseless_literal(c: int, flags: int) -> Ranges:
    # outside the fold set no character is caseless-equal to another one (see etl.regexes.ucd)
    return _merge(_fold_matches(_u(c), flags) + ((c, c),))


def literal_ranges(c: int, flags: int) -> Ranges:
    if not flags & _I or not _sre.unicode_iscased(c):
        return ((c, c),)
    return _caseless_literal(c, flags & (_I | _A))


def not_literal_ranges(c: int, flags: int) -> Ranges:
    """What ``[^c]`` (sre's NOT_LITERAL) matches: caselessly, no character caseless-equal to c."""
    if flags & _I and _sre.unicode_iscased(c):
        return class_ranges([(C.NEGATE, None), (C.LITERAL, c)], flags)
    return complement(((c, c),))


@lru_cache(maxsize=4096)
def _esc(c: int) -> str:
    ch = chr(c)
    if ch.isascii() and ch.isalnum():
        return ch
    if c == 0x20:
        return " "
    if 0x20 < c < 0x7F:
        return "\\" + ch
    return f"\\x{{{c:x}}}"


def _has_cased(ranges: Ranges) -> bool:
    """May the set hold a character Hyperscan's caseless mode would fold? (ASCII letters or non-ASCII)"""
    for lo, hi in ranges:
        if hi > ASCII_MAX:
            return True
        for a, b in ((ord("A"), ord("Z")), (ord("a"), ord("z"))):
            if lo <= b and hi >= a:
                return True
    return False


def clip_ascii(ranges: Ranges) -> Ranges:
    return tuple((lo, min(hi, ASCII_MAX)) for lo, hi in ranges if lo <= ASCII_MAX)


@lru_cache(maxsize=16384)
def emit_set(ranges: Ranges, hs_caseless: bool) -> tuple[str, bool]:
    """Hyperscan text for a code point set, and whether it is a superset (non-ASCII approximated)."""
    ranges = _merge(ranges)
    if not ranges:
        return "[^\\x{0}-\\x{10ffff}]", False
    approx = False
    comp = complement(ranges)
    neg = 0 < len(comp) < len(ranges)
    chosen = comp if neg else ranges
    if sum(1 for lo, hi in chosen if hi > ASCII_MAX) > NONASCII_RANGE_LIMIT:
        ranges = _merge(clip_ascii(ranges) + ((ASCII_MAX + 1, MAX_CP),))
        comp = complement(ranges)
        neg = 0 < len(comp) < len(ranges)
        chosen = comp if neg else ranges
        approx = True
    if hs_caseless and len(ranges) == 2 and all(lo == hi for lo, hi in ranges):
        a, b = ranges[0][0], ranges[1][0]
        if chr(a).isascii() and chr(a).isupper() and chr(a).lower() == chr(b) and chr(b) not in _HS_FOLDS_BEYOND_ASCII:
            return chr(b), approx  # plain ASCII letter pair: Hyperscan's caseless flag does it
    if not neg and len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        text = _esc(ranges[0][0])
        cased = _sre.unicode_iscased(ranges[0][0])
    else:
        parts = []
        for lo, hi in chosen:
            parts.append(_esc(lo) if lo == hi else f"{_esc(lo)}-{_esc(hi)}")
        text = "[" + ("^" if neg else "") + "".join(parts) + "]"
        cased = True if neg else _has_cased(ranges)
    if hs_caseless and cased:
        text = f"(?-i:{text})"
    return text, approx


# --------------------------------------------------------------------------- tree walk


@dataclass
class _Frag:
    text: str
    minlen: int
    atom: bool  # can take a quantifier without a group


class _Unsupported(Exception):
    pass


class _Walker:
    def __init__(self, hs_caseless: bool, hs_dotall: bool, relax: bool):
        self.hs_caseless = hs_caseless
        self.hs_dotall = hs_dotall
        self.relax = relax
        self.lossy: list[str] = []  # superset on every row
        self.ascii_only: list[str] = []  # exact on ASCII values only
        self.nonascii_superset: list[str] = []  # superset on non-ASCII values
        self.asserts = False  # zero-width tests, backrefs, conditionals: may fail at a position
        self.groups: dict[int, tuple[str, int, bool]] = {}  # gid -> (text, minlen, ignorecase)

    def _set(self, ranges: Ranges) -> _Frag:
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1] and ranges[0][0] < 0x80 and (
                not self.hs_caseless or not chr(ranges[0][0]).isalpha()):
            return _Frag(_esc(ranges[0][0]), 1, True)  # the common case: one ASCII character
        text, approx = emit_set(ranges, self.hs_caseless)
        if approx and "Unicode character class" not in self.nonascii_superset:
            self.nonascii_superset.append("Unicode character class")
        return _Frag(text, 1, True)

    def seq(self, items, flags: int) -> _Frag:
        frags: list[_Frag | tuple[str, int]] = []
        items = list(items)
        for k, (op, av) in enumerate(items):
            if op is C.AT and av is C.AT_BOUNDARY and not self.relax and not flags & _A:
                frags.append(self._boundary(items, k, flags))
            else:
                frags.append(self.node(op, av, flags))
        # multiline ^ : Hyperscan does not match it after a final newline, Python does;
        # that position only matters when what follows can be empty
        out: list[_Frag] = []
        for k, f in enumerate(frags):
            if isinstance(f, tuple):
                rest = sum(x.minlen for x in frags[k + 1:] if isinstance(x, _Frag))
                if rest > 0 and not self.relax:
                    out.append(_Frag("(?m:^)", 0, False))
                else:
                    self._lose("multiline ^ before an empty remainder")
                continue
            out.append(f)
        if len(out) == 1:
            return out[0]
        return _Frag("".join(f.text for f in out), sum(f.minlen for f in out), False)

    def _lose(self, why: str) -> None:
        self.asserts = True
        if why not in self.lossy:
            self.lossy.append(why)

    def node(self, op, av, flags: int):  # noqa: C901 - one branch per sre opcode (a dispatch)
        if op is C.LITERAL:
            return self._set(literal_ranges(av, flags))
        if op is C.NOT_LITERAL:
            return self._set(not_literal_ranges(av, flags))
        if op is C.ANY:
            dotall = bool(flags & _S)
            if dotall == self.hs_dotall:
                return _Frag(".", 1, True)
            return _Frag("(?s:.)" if dotall else "[^\\n]", 1, True)
        if op is C.IN:
            return self._set(class_ranges(av, flags))
        if op is C.BRANCH:
            alts = [self.seq(s, flags) for s in av[1]]
            return _Frag("(?:" + "|".join(a.text for a in alts) + ")", min(a.minlen for a in alts), True)
        if op is C.SUBPATTERN:
            gid, add, dele, sub = av
            inner = self.seq(sub, (flags | add) & ~dele)
            if gid is not None:
                self.groups[gid] = (inner.text, inner.minlen, bool((flags | add) & ~dele & _I))
            if inner.atom:
                return inner
            return _Frag(f"(?:{inner.text})", inner.minlen, True)
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            if op is C.POSSESSIVE_REPEAT:
                self._lose("possessive repeat")
            return self._repeat(lo, hi, self.seq(sub, flags))
        if op is C.ATOMIC_GROUP:
            self._lose("atomic group")
            inner = self.seq(av, flags)
            return _Frag(f"(?:{inner.text})", inner.minlen, True)
        if op in (C.ASSERT, C.ASSERT_NOT):
            self._lose("lookahead" if av[0] == 1 else "lookbehind")
            return _Frag("", 0, False)
        if op is C.GROUPREF:
            self._lose("backreference")
            group = self.groups.get(av)
            if group is not None and (group[2] or not flags & _I):
                return _Frag(f"(?:{group[0]})", group[1], True)
            return _Frag("(?s:.*)", 0, False)
        if op is C.GROUPREF_EXISTS:
            self._lose("conditional group")
            yes = self.seq(av[1], flags)
            no = self.seq(av[2], flags) if av[2] is not None else _Frag("", 0, False)
            return _Frag(f"(?:{yes.text}|{no.text})", min(yes.minlen, no.minlen), True)
        if op is C.AT:
            return self._at(av, flags)
        raise _Unsupported(f"unsupported construct {op}")

    def _repeat(self, lo: int, hi: int, item: _Frag) -> _Frag:
        if self.relax and (lo > RELAX_REPEAT_CAP or (hi != C.MAXREPEAT and hi > RELAX_REPEAT_CAP)):
            self._lose("large repeat relaxed")
            if hi != C.MAXREPEAT and hi > RELAX_REPEAT_CAP:
                hi = C.MAXREPEAT
            lo = min(lo, RELAX_REPEAT_CAP)
        if hi != C.MAXREPEAT and hi == 0:
            return _Frag("", 0, False)
        body = item.text if item.atom else f"(?:{item.text})"
        if not item.text:
            return _Frag("", 0, False)
        if hi == C.MAXREPEAT:
            q = {0: "*", 1: "+"}.get(lo, f"{{{lo},}}")
        elif lo == 0 and hi == 1:
            q = "?"
        elif lo == hi:
            q = f"{{{lo}}}"
        else:
            q = f"{{{lo},{hi}}}"
        return _Frag(body + q, lo * item.minlen, False)

    def _boundary(self, items: list, k: int, flags: int) -> _Frag:
        """Unicode ``\\b`` as Hyperscan's ASCII ``\\b``: exact on ASCII values. Next to a literal
        ASCII word character it is also a superset on other values (a non-ASCII neighbour is a
        non-word character for Hyperscan, perhaps a word character for Python: Hyperscan sees
        more boundaries, never fewer), so reports there only need confirming."""
        self.asserts = True
        word = frozenset(range(48, 58)) | frozenset(range(65, 91)) | frozenset(range(97, 123)) | {95}
        for j in (k - 1, k + 1):
            if 0 <= j < len(items) and items[j][0] is C.LITERAL:
                rs = literal_ranges(items[j][1], flags)
                if all(c in word for lo, hi in rs for c in range(lo, hi + 1)):
                    if "Unicode word boundary" not in self.nonascii_superset:
                        self.nonascii_superset.append("Unicode word boundary")
                    return _Frag("\\b", 0, False)
        if "Unicode word boundary" not in self.ascii_only:
            self.ascii_only.append("Unicode word boundary")
        return _Frag("\\b", 0, False)

    def _at(self, code, flags: int):
        self.asserts = True
        multiline = bool(flags & _M)
        if self.relax:
            self._lose("anchors dropped")
            return _Frag("", 0, False)
        if code is C.AT_BEGINNING:
            return ("^m", 0) if multiline else _Frag("^", 0, False)
        if code is C.AT_BEGINNING_STRING:
            return _Frag("\\A", 0, False)
        if code is C.AT_END:
            return _Frag("(?m:$)" if multiline else "$", 0, False)
        if code is C.AT_END_STRING:
            return _Frag("\\z", 0, False)
        if code in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
            if not flags & _A and "Unicode word boundary" not in self.ascii_only:
                self.ascii_only.append("Unicode word boundary")
            return _Frag("\\b" if code is C.AT_BOUNDARY else "\\B", 0, False)
        raise _Unsupported(f"unsupported anchor {code}")


@lru_cache(maxsize=65536)
def translate(regex: str, flags: int = 0, relax: bool = False) -> Translation:
    """Hyperscan translation of ``re.search(regex, ., flags)``; raises ``re.error`` on a bad pattern."""
    parsed = sre_parse.parse(regex, int(flags))
    gflags = int(parsed.state.flags)
    hs_caseless = bool(gflags & _I)
    hs_dotall = bool(gflags & _S)
    hs_flags = HS_BASE_FLAGS | (hyperscan.HS_FLAG_CASELESS if hs_caseless else 0) | (
        hyperscan.HS_FLAG_DOTALL if hs_dotall else 0)
    w = _Walker(hs_caseless, hs_dotall, relax)
    try:
        frag = w.seq(parsed, gflags)
    except _Unsupported as e:
        return Translation(None, hs_flags, reason=str(e))
    if frag.minlen == 0:
        if not w.asserts:
            return Translation(None, hs_flags, always=True, notes=("matches the empty string",))
        return Translation(None, hs_flags, reason="can match an empty string at some positions only")
    notes = tuple(w.lossy + w.ascii_only + w.nonascii_superset)
    ascii_rows = "confirm" if w.lossy else "exact"
    if w.ascii_only:
        other = "python"
    elif w.lossy or w.nonascii_superset:
        other = "confirm"
    else:
        other = "exact"
    return Translation(frag.text, hs_flags, ascii_rows, other, notes=notes)


@lru_cache(maxsize=65536)
def test_compile(expression: str, flags: int) -> str | None:
    """Compile one expression alone; the Hyperscan error text, or None when it compiles.

    A compile that may be slow gets a time budget (etl/regexes/hsbound.py); past it, the
    expression counts as rejected."""
    from etl.regexes.hsbound import PATTERN_BUDGET_S, BudgetExceeded, bounded, can_fork, may_be_slow

    if may_be_slow(expression) and can_fork():
        key = (expression, flags)
        if key not in _SLOW_VERDICTS:  # each slow expression is compiled (or given up) once per process
            try:
                _SLOW_VERDICTS[key] = bounded(_test_compile, expression, flags, seconds=PATTERN_BUDGET_S)
            except BudgetExceeded as e:
                _SLOW_VERDICTS[key] = f"not compiled: {e}"
        return _SLOW_VERDICTS[key]
    return _test_compile(expression, flags)


# (pattern, flags) -> the verdict of a slow compile (as test_compile's lru_cache, 65,536 kept)
_SLOW_VERDICTS: WorkerCache[tuple[str, int], str | None] = WorkerCache(
    "slow Hyperscan compile verdicts", 65536, also_clear=test_compile.cache_clear)  # forgotten with test_compile's


def known_rejected(expression: str, flags: int) -> bool:
    """A slow expression this process already found Hyperscan rejects (or could not compile in time)."""
    return _SLOW_VERDICTS.get((expression, flags)) is not None


def _test_compile(expression: str, flags: int) -> str | None:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[expression.encode("utf-8")], ids=[0], flags=[flags])
    except hyperscan.error as e:
        return str(e).rstrip(".")
    return None


@dataclass(frozen=True)
class PatternPlan:
    """How one pattern runs: ``hyperscan`` (with a translation), ``always`` or ``python``."""

    kind: str
    translation: Translation | None
    reason: str | None


@lru_cache(maxsize=65536)
def plan_pattern(regex: str, flags: int, check: bool = True) -> PatternPlan:
    """Choose how a pattern runs; with ``check`` the translation is test-compiled alone."""
    t = translate(regex, flags)
    if t.always:
        return PatternPlan("always", t, None)
    if t.expression is None:
        return PatternPlan("python", None, t.reason)
    err = test_compile(t.expression, t.flags) if check else None
    if err is None:
        reason = None
        if not t.exact:
            reason = ", ".join(t.notes)
        return PatternPlan("hyperscan", t, reason)
    r = translate(regex, flags, relax=True)
    if r.expression is not None and test_compile(r.expression, r.flags) is None:
        r = replace(r, ascii_rows="confirm", other_rows="confirm")
        return PatternPlan("hyperscan", r, f"Hyperscan rejects the exact form ({err})")
    return PatternPlan("python", None, f"Hyperscan rejects it ({err})")


def hyperscan_rejects(pattern: str, caseless: bool) -> str | None:
    """Why a regex cannot run exactly in Hyperscan (None when it can).

    A reason is returned when the pattern runs in Python ``re`` instead, or
    as a Hyperscan prefilter whose every report Python ``re`` confirms.
    Refinements for non-ASCII values only (Unicode ``\\b``, large Unicode
    classes) are not rejections.
    """
    flags = _I if caseless else 0
    try:
        re.compile(pattern, flags)
    except re.error as e:
        return f"invalid regular expression: {e}"
    plan = plan_pattern(pattern, flags)
    if plan.kind == "python":
        return plan.reason
    if plan.kind == "hyperscan" and plan.translation is not None and plan.translation.ascii_rows != "exact":
        notes = plan.reason or ", ".join(plan.translation.notes)
        return f"{notes}: a Hyperscan superset confirmed by Python re"
    return None


# --------------------------------------------------------------------------- pattern ops -> regex


def like_regex(pattern: str) -> str:
    """SQL LIKE (``%`` any run, ``_`` one character, backslash escapes) as a whole-value regex.

    A leading or trailing run of ``%`` drops the anchor on that side; a
    trailing lone backslash is a literal backslash.
    """
    tokens: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            tokens.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        tokens.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    start = 0
    while start < len(tokens) and tokens[start] == ".*":
        start += 1
    if start == len(tokens) and tokens:
        return "(?s)"  # only %: every value
    end = len(tokens)
    while end > start and tokens[end - 1] == ".*":
        end -= 1
    body = "".join(tokens[start:end])
    head = "" if start > 0 else "\\A"
    tail = "" if end < len(tokens) else "\\Z"
    return "(?s)" + head + body + tail


def op_regex(op: str, value: str) -> str:
    """The regex whose ``re.search`` is the meaning of a pattern operator."""
    if op == "regex":
        return value
    if op == "contains":
        return re.escape(value)
    if op == "starts_with":
        return "\\A" + re.escape(value)
    if op == "ends_with":
        return re.escape(value) + "\\Z"
    if op == "like":
        return like_regex(value)
    raise ValueError(f"not a pattern operator: {op}")
