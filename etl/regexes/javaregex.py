"""Python ``re`` patterns -> java.util.regex patterns with the same ``re.search`` meaning.

The JVM rule path (etl/jvm/RuleMatch.java, see :mod:`etl.optimize.jvmprogram`)
decides rule sets without a Python worker. Its patterns must find a match
exactly where ``re.search(regex, value, flags)`` does, so the pattern is not
passed through (Java and Python differ on ``$``, ``\\Z``, ``.``, Unicode
``\\w``/``\\d``/``\\s``, ``\\b`` and case folding): it is parsed with Python's own
parser and written anew, construct by construct, without any Java flag:

* every character class (a literal, caseless or not, ``.``, ``[...]``,
  ``\\d`` ...) becomes the exact set of code points Python matches (the sets of
  :mod:`etl.regexes.hsregex`: Python's category tables and case folding);
* anchors become what Python means: ``$`` is ``(?=\\n?\\z)``, multiline ``^`` is
  ``(?:\\A|(?<=\\n))``, ``\\Z`` is ``\\z``; ``\\b``/``\\B`` are lookarounds over
  Python's word set (``\\B`` never holds in an empty string, as in Python 3.11);
* groups, alternation, greedy and lazy repeats and lookarounds keep their form.

Backreferences, conditionals, atomic groups, possessive repeats and unbounded
repeats of alternations or variable-width parts (``(ab|cd)*``, ``(\\w+\\s)+``:
java.util.regex recurses once per repetition there, and a long value would
overflow the stack, where Python ``re`` does not) are not translated
(:class:`Unsupported`): a rule set using them stays on the Python path. Two forms are produced: ``ascii`` has every set cut to ASCII (exact on
values without other characters, and small), ``unicode`` is exact on every
value. Java's lookbehind steps over a supplementary character correctly only
when the pattern text itself holds one, so the Unicode form holds one (in an
optional empty-safe group at its end, which changes no answer) and writes
non-ASCII code points as themselves. Long classes are written as marks
(:func:`shared`, :func:`expand`) so that a program file holds each once.
"""

from __future__ import annotations

import re
import re._constants as C  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from dataclasses import dataclass
from functools import lru_cache

from etl.regexes.hsregex import (Ranges, category_ranges, class_ranges, clip_ascii, complement, literal_ranges,
                                  not_literal_ranges)

_I, _S, _M, _A, _L = int(re.IGNORECASE), int(re.DOTALL), int(re.MULTILINE), int(re.ASCII), int(re.LOCALE)
MAX_COUNT = 100_000  # larger repeat counts are left to Python (Java's limits differ)
DEEP_REPEAT = 64  # a repeat allowed more times than this must have a fixed-width body (see `_fixed_width`)
ALL: Ranges = ((0, 0x10FFFF),)
_SUPPLEMENTARY_MARK = "(?:\U0010ffff)?"  # see the module docstring: makes Java step back by code points


class Unsupported(Exception):
    """The pattern has a construct this translation does not carry over exactly."""


@dataclass(frozen=True)
class JavaPattern:
    ascii: str  # exact on ASCII values
    unicode: str  # exact on every value
    caseless: bool  # some part matches case-insensitively (its literals then only hold on ASCII values)


def _char(c: int, ascii_only: bool) -> str:
    if c < 0x80:
        ch = chr(c)
        return ch if ch.isalnum() else f"\\x{{{c:x}}}"
    if 0xD800 <= c <= 0xDFFF or ascii_only:
        return f"\\x{{{c:x}}}"
    return chr(c)


SHARED_OVER = 96  # a class text longer than this is written once per program file (see `shared`)
_SHARED: dict[str, int] = {}  # long class text -> its number (the process's, append-only)
_SHARED_TEXT: list[str] = []
_MARK = re.compile(r"@(\d+)@")


@lru_cache(maxsize=16384)
def _set(ranges: Ranges, ascii_only: bool) -> str:
    if ascii_only:
        ranges = clip_ascii(ranges)
    if not ranges:
        return "(?!)"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _char(ranges[0][0], ascii_only)
    parts = [_char(lo, ascii_only) if lo == hi else f"{_char(lo, ascii_only)}-{_char(hi, ascii_only)}"
             for lo, hi in ranges]
    text = "[" + "".join(parts) + "]"
    if len(text) <= SHARED_OVER:
        return text
    # a Unicode class (\w has about 700 ranges, and \b uses it four times): a mark `@n@` instead, which no
    # translation writes otherwise (a bare @ is always written \x{40})
    n = _SHARED.get(text)
    if n is None:
        n = _SHARED[text] = len(_SHARED_TEXT)
        _SHARED_TEXT.append(text)
    return f"@{n}@"


def shared(text: str) -> dict[int, str]:
    """The long classes a translated pattern refers to by mark: number -> class text."""
    return {int(n): _SHARED_TEXT[int(n)] for n in _MARK.findall(text)}


def expand(text: str) -> str:
    """The pattern with its marks replaced by their classes (what RuleMatch compiles)."""
    return _MARK.sub(lambda m: _SHARED_TEXT[int(m.group(1))], text)


def _fixed_width(items) -> bool:
    """Does every match of the items have one length, without alternation? (java.util.regex then repeats the
    body in a loop; a body with alternatives or optional parts it repeats by recursion)"""
    for op, av in items:
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            continue
        if op is C.AT and av not in (C.AT_BEGINNING_STRING, C.AT_END_STRING):  # \b, ^ and $: see `_Writer.at`
            return False
        if op is C.SUBPATTERN:
            if not _fixed_width(av[3]):
                return False
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            if av[0] != av[1] or not _fixed_width(av[2]):
                return False
        elif op in (C.ASSERT, C.ASSERT_NOT):
            if not _fixed_width(av[1]):
                return False
        else:
            return False
    return True


class _Writer:
    def __init__(self, ascii_only: bool, deep: bool = False):
        self.ascii_only = ascii_only
        self.deep = deep
        self.caseless = False

    def seq(self, items, flags: int) -> str:
        return "".join(self.node(op, av, flags) for op, av in items)

    def node(self, op, av, flags: int) -> str:
        if flags & _I:
            self.caseless = True
        if op is C.LITERAL:
            return self.set(literal_ranges(av, flags))
        if op is C.NOT_LITERAL:
            return self.set(not_literal_ranges(av, flags))
        if op is C.ANY:
            return self.set(ALL if flags & _S else complement(((10, 10),)))
        if op is C.IN:
            return self.set(class_ranges(av, flags))
        if op is C.BRANCH:
            return "(?:" + "|".join(self.seq(s, flags) for s in av[1]) + ")"
        if op is C.SUBPATTERN:
            _gid, add, dele, sub = av
            return "(?:" + self.seq(sub, (flags | add) & ~dele) + ")"
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            if lo > MAX_COUNT or (hi != C.MAXREPEAT and hi > MAX_COUNT):
                raise Unsupported(f"a repeat count above {MAX_COUNT}")
            if (hi == C.MAXREPEAT or hi > DEEP_REPEAT) and not self.deep and not _fixed_width(sub):
                # java.util.regex recurses once per repetition of such a body: a long value overflows the stack
                raise Unsupported("an unbounded repeat of an alternation or of a variable-width part")
            q = f"{{{lo},}}" if hi == C.MAXREPEAT else f"{{{lo},{hi}}}"
            return "(?:" + self.seq(sub, flags) + ")" + q + ("?" if op is C.MIN_REPEAT else "")
        if op in (C.ASSERT, C.ASSERT_NOT):
            direction, sub = av
            head = {(1, C.ASSERT): "(?=", (1, C.ASSERT_NOT): "(?!", (-1, C.ASSERT): "(?<=",
                    (-1, C.ASSERT_NOT): "(?<!"}[(direction, op)]
            return head + self.seq(sub, flags) + ")"
        if op is C.AT:
            return self.at(av, flags)
        names = {C.GROUPREF: "a backreference", C.GROUPREF_EXISTS: "a conditional group",
                 C.ATOMIC_GROUP: "an atomic group", C.POSSESSIVE_REPEAT: "a possessive repeat"}
        raise Unsupported(names.get(op, f"the construct {op}"))

    def set(self, ranges: Ranges) -> str:
        return _set(ranges, self.ascii_only)

    def at(self, code, flags: int) -> str:
        multiline = bool(flags & _M)
        if code is C.AT_BEGINNING:
            return "(?:\\A|(?<=\\x{a}))" if multiline else "\\A"
        if code is C.AT_BEGINNING_STRING:
            return "\\A"
        if code is C.AT_END:
            return "(?=\\x{a}|\\z)" if multiline else "(?=\\x{a}?\\z)"
        if code is C.AT_END_STRING:
            return "\\z"
        if code in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
            w = self.set(category_ranges(C.CATEGORY_WORD, flags))
            if code is C.AT_BOUNDARY:
                return f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))"
            anything = self.set(ALL)
            return f"(?:(?<={w})(?={w})|(?<!{w})(?!{w}))(?:(?={anything})|(?<={anything}))"
        raise Unsupported(f"the anchor {code}")


@lru_cache(maxsize=65536)
def translate(regex: str, flags: int = 0, deep: bool = False) -> JavaPattern:
    """The Java forms of ``re.search(regex, ., flags)``; raises :class:`Unsupported` (or ``re.error``). With
    `deep`, unbounded repeats of variable-width parts are translated too: the caller must treat a
    StackOverflowError of the search as a failure of the pattern (etl/jvm/RuleMatch.java does: the rule set
    then moves to the Python path, as for a pattern past its step budget)."""
    parsed = sre_parse.parse(regex, int(flags))
    gflags = int(parsed.state.flags)
    if gflags & _L:
        raise Unsupported("the LOCALE flag")
    try:
        ascii_form = _Writer(True, deep).seq(parsed, gflags)
        w = _Writer(False, deep)
        unicode_form = w.seq(parsed, gflags)
    except RecursionError:
        raise Unsupported("a pattern nested too deeply") from None
    return JavaPattern(ascii_form, unicode_form + _SUPPLEMENTARY_MARK, w.caseless)


def unsupported_reason(regex: str, flags: int = 0, deep: bool = False) -> str | None:
    try:
        translate(regex, flags, deep)
    except Unsupported as e:
        return str(e)
    except (re.error, OverflowError) as e:
        return f"not a valid pattern ({e})"
    return None
