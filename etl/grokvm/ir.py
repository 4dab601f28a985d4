"""Regex -> small immutable IR (nested tuples); predicates and rewrites are in ``props``.

The regex is parsed by Python's own parser (``re._parser.parse``), so the syntax accepted
and the group numbering are exactly Python's. Non-capturing groups disappear, flags are
resolved per node, and every one-character item becomes a 128-bit ASCII byte mask computed
by asking Python's ``re`` itself which of the 128 ASCII characters the item matches (with
the flags in force there: IGNORECASE with Python's case folding, e.g. ``\\u212a`` matches
``k``; ``\\s`` with Python's definition, which includes ``\\x1c``-``\\x1f``).

IR nodes (hashable tuples):

* ``('set', mask)``               one byte whose value b has bit b set in ``mask``
* ``('seq', (x, ...))``           concatenation (never nested, never of length 1)
* ``('alt', (x, ...))``           ordered alternation (first option has priority)
* ``('cap', n, x)``               capture group n (1-based, Python's numbering)
* ``('rep', min, max, greedy, x)`` repeat; ``max`` None = unbounded; lazy: greedy False
* ``('atomic', x)``               atomic group ``(?>x)``; ``x*+`` is ``('atomic', ('rep', ...))``
* ``('prev', mask, at_start)``    zero-width: previous byte in ``mask`` (or: at position 0 -> ``at_start``)
* ``('next', mask, at_eof)``      zero-width: next byte in ``mask`` (or: at end of input -> ``at_eof``)
* ``('wb', negated)``             ``\\b`` / ``\\B`` (Python quirk: ``\\B`` never matches the empty string)
* ``('look', negated, x)``        general lookahead ``(?=x)`` / ``(?!x)`` (walker level only)

``^`` = ``('prev', 0, True)``; with MULTILINE ``('prev', {\\n}, True)``; ``\\A`` likewise; ``\\Z`` =
``('next', 0, True)``; ``$`` with MULTILINE = ``('next', {\\n}, True)``; ``$`` without MULTILINE is
the general lookahead ``(?=\\n?\\Z)``; one-character lookbehinds/lookaheads become prev/next.
"""
from __future__ import annotations

import functools
import re
import re._constants as C
import re._parser as P

ALL = (1 << 128) - 1
NL = 1 << 10
WORD = sum(1 << b for b in range(128) if chr(b).isalnum() or b == 0x5F)
EMPTY = ('seq', ())


class Unsupported(Exception):
    """The regex (or a part of it) cannot be run by the fast matcher; use the real engine."""


# --------------------------------------------------------------------------- constructors

def seq(items) -> tuple:
    out: list = []
    for x in items:
        if x[0] == 'seq':
            out.extend(x[1])
        else:
            out.append(x)
    return out[0] if len(out) == 1 else ('seq', tuple(out))


def alt(options) -> tuple:
    opts = tuple(options)
    return opts[0] if len(opts) == 1 else ('alt', opts)


def rep(mn: int, mx: int | None, greedy: bool, x: tuple) -> tuple:
    if mx == 0:
        return EMPTY
    if mn == 1 and mx == 1:
        return x
    return ('rep', mn, mx, bool(greedy) or mn == mx, x)


# --------------------------------------------------------------------------- parsing

_CATS = {C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
         C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W"}
_MASK_FLAGS = re.IGNORECASE | re.ASCII | re.UNICODE


@functools.lru_cache(maxsize=4096)
def _oracle_mask(cls: str, flags: int) -> int:
    """Which ASCII characters the one-character regex ``cls`` matches, according to ``re``."""
    rx = re.compile(cls, flags & _MASK_FLAGS)
    return sum(1 << b for b in range(128) if rx.fullmatch(chr(b)))


def _u(c: int) -> str:
    return f"\\U{c:08x}"


def _class_str(items) -> str:
    parts: list[str] = []
    for op, av in items:
        if op is C.NEGATE:
            parts.insert(0, "^")
        elif op is C.LITERAL:
            parts.append(_u(av))
        elif op is C.RANGE:
            parts.append(_u(av[0]) + "-" + _u(av[1]))
        elif op is C.CATEGORY and av in _CATS:
            parts.append(_CATS[av])
        else:
            raise Unsupported(f"character class item {op} {av}")
    return "[" + "".join(parts) + "]"


CR = 1 << 13


def parse(regex: str, flags: int = 0) -> tuple[tuple, int, int]:
    """Parse ``regex`` with Python's parser; return (IR, number of capture groups, dialect
    bytes). Dialect bytes: ASCII bytes on which Python's ``re`` and ``java.util.regex`` may
    disagree for the constructs used (``\\s`` and ``\\x1c``-``\\x1f``; IGNORECASE with non-ASCII
    pattern characters such as ``\\u212a`` and ``k``; ``$``, MULTILINE anchors and non-DOTALL
    ``.`` and ``\\r``); lines containing them are left to the real engine."""
    try:
        sp = P.parse(regex, flags)
    except (re.error, OverflowError, RecursionError) as e:
        raise Unsupported(f"regex does not parse: {e}") from None
    gflags = sp.state.flags
    if gflags & re.LOCALE:
        raise Unsupported("LOCALE flag")
    acc = [0]
    x = _conv(sp, gflags, acc)
    return x, sp.state.groups - 1, acc[0]


def _has_group(data) -> bool:
    """Does a parsed subpattern contain a capturing group?"""
    for op, av in data:
        if op is C.SUBPATTERN and av[0]:
            return True
        subs = (av[1] if op is C.BRANCH else [av[3]] if op is C.SUBPATTERN else [av] if op is C.ATOMIC_GROUP
                else [av[2]] if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
                else [av[1]] if op in (C.ASSERT, C.ASSERT_NOT) else [])
        if any(_has_group(sub) for sub in subs):
            return True
    return False


def _set(cls: str, flags: int, acc: list) -> tuple:
    """One-byte item: Python's mask; bytes where ASCII-only semantics (Java's defaults: ASCII
    ``\\s``, ASCII-only case folding) would differ go to the dialect set."""
    m = _oracle_mask(cls, flags)
    acc[0] |= m ^ _oracle_mask(cls, (flags & ~re.UNICODE) | re.ASCII)
    return ('set', m)


def _conv(data, flags: int, acc: list) -> tuple:
    return seq(_conv1(op, av, flags, acc) for op, av in data)


def _conv1(op, av, flags: int, acc: list) -> tuple:  # noqa: C901 - one branch per sre opcode (a dispatch)
    if op is C.LITERAL:
        return _set(_u(av), flags, acc)
    if op is C.NOT_LITERAL:
        return _set("[^" + _u(av) + "]", flags, acc)
    if op is C.IN:
        return _set(_class_str(av), flags, acc)
    if op is C.ANY:
        if not flags & re.DOTALL:
            acc[0] |= CR
        return ('set', ALL if flags & re.DOTALL else ALL & ~NL)
    if op is C.BRANCH:
        return alt(_conv(b, flags, acc) for b in av[1])
    if op is C.SUBPATTERN:
        group, add, delete, p = av
        body = _conv(p, (flags | add) & ~delete, acc)
        return ('cap', group, body) if group else body
    if op is C.ATOMIC_GROUP:
        return ('atomic', _conv(av, flags, acc))
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        mn, mx, p = av
        r = rep(mn, None if mx == C.MAXREPEAT else mx, op is not C.MIN_REPEAT, _conv(p, flags, acc))
        return ('atomic', r) if op is C.POSSESSIVE_REPEAT and r[0] == 'rep' else r
    if op is C.AT:
        ml = bool(flags & re.MULTILINE)
        if av is C.AT_END or (ml and av is C.AT_BEGINNING):
            acc[0] |= CR
        if av is C.AT_BEGINNING:
            return ('prev', NL if ml else 0, True)
        if av is C.AT_BEGINNING_STRING:
            return ('prev', 0, True)
        if av is C.AT_END_STRING:
            return ('next', 0, True)
        if av is C.AT_END:
            return ('next', NL, True) if ml else ('look', False, seq([rep(0, 1, True, ('set', NL)), ('next', 0, True)]))
        if av is C.AT_BOUNDARY:
            return ('wb', False)
        if av is C.AT_NON_BOUNDARY:
            return ('wb', True)
        raise Unsupported(f"anchor {av}")
    if op in (C.ASSERT, C.ASSERT_NOT):
        direction, p = av
        neg = op is C.ASSERT_NOT
        body = _conv(p, flags, acc)
        if body[0] == 'set':
            m = body[1]
            kind = 'prev' if direction < 0 else 'next'
            return (kind, ALL & ~m, True) if neg else (kind, m, False)
        if direction < 0:
            raise Unsupported("lookbehind wider than one character")
        if _has_group(p):
            raise Unsupported("capture group inside a lookahead")
        return ('look', neg, body)
    raise Unsupported(f"regex construct {op}")


def to_regex(x: tuple) -> str:
    """Readable Python-regex rendering of an IR node (debugging, tests, reports)."""
    k = x[0]
    if k == 'set':
        return mask_str(x[1])
    if k == 'seq':
        return "".join(_paren(i) if i[0] == 'alt' else to_regex(i) for i in x[1])
    if k == 'alt':
        return "|".join(to_regex(o) for o in x[1])
    if k == 'cap':
        return "(" + to_regex(x[2]) + ")"
    if k == 'atomic':
        return "(?>" + to_regex(x[1]) + ")"
    if k == 'rep':
        mn, mx = x[1], x[2]
        q = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((mn, mx))
        if q is None:
            q = f"{{{mn}}}" if mn == mx else f"{{{mn},{'' if mx is None else mx}}}"
        body = to_regex(x[4])
        if not (x[4][0] == 'set' or x[4][0] == 'cap'):
            body = "(?:" + body + ")"
        return body + q + ("" if x[3] else "?")
    if k == 'prev':
        return f"(?:(?<={mask_str(x[1])}){'|^' if x[2] else ''})" if x[1] else ("^" if x[2] else "(?!)")
    if k == 'next':
        return "(?:(?=" + mask_str(x[1]) + ")" + (r"|\Z" if x[2] else "") + ")" if x[1] else (r"\Z" if x[2] else "(?!)")
    if k == 'wb':
        return r"\B" if x[1] else r"\b"
    if k == 'look':
        return f"(?{'!' if x[1] else '='}{to_regex(x[2])})"
    raise ValueError(x)


def _paren(i: tuple) -> str:
    return "(?:" + to_regex(i) + ")"


def mask_str(m: int) -> str:
    bs = [b for b in range(128) if m >> b & 1]
    if len(bs) == 1:
        return re.escape(chr(bs[0])) if bs[0] >= 32 else f"\\x{bs[0]:02x}"
    if m == ALL:
        return "[\\x00-\\x7f]"
    neg = len(bs) > 64
    if neg:
        bs = [b for b in range(128) if not m >> b & 1]
    parts, i = [], 0
    while i < len(bs):
        j = i
        while j + 1 < len(bs) and bs[j + 1] == bs[j] + 1:
            j += 1
        lo, hi = bs[i], bs[j]
        parts.append(f"\\x{lo:02x}" if lo == hi else f"\\x{lo:02x}-\\x{hi:02x}")
        i = j + 1
    return "[" + ("^" if neg else "") + "".join(parts) + "]"
