"""Required literals: a cheap necessary condition for a program to match a row, for a JVM-side prefilter.

``required_literals(regex, flags)`` gives a set of lower-case ASCII strings
such that, for every ASCII text ``s``, ``re.search(regex, s, flags)`` finding a
match implies that ``s.lower()`` contains one of them (or None when no such
set with literals of at least ``MIN_LENGTH`` characters is found). It walks
the parsed pattern: a concatenation needs what any one of its mandatory parts
needs (the best one is chosen: the longest shortest literal), an alternation
needs one of what its branches need, a repeat of at least one needs what its
body needs; runs of literal characters (caseless ones folded, one-character
classes included) are literals themselves. Everything else (classes, ``.``,
anchors, lookaround, backreferences, optional parts) needs nothing.

``program_literals(program)`` lifts this to a compiled FilterProgram: when
every rule needs at least one of its pattern predicates to hold (its tree with
every pattern false folds to false) and every pattern predicate has required
literals, a row can only match if, on some field, the field's text contains
one of that field's literals. Where a pattern has several mandatory parts, the
one whose literals the fewest other patterns share is taken (a literal most
rules require, like a command name, is likely common in the data too).
``program_literal_groups`` keeps up to three needs per pattern, all of which a
text must satisfy (``python .*socket``: "python" and "socket"): the JVM
prefilter checks those. The first need of a group has literals of at least
``MIN_LENGTH`` characters; the others may be shorter (``SECONDARY_MIN_LENGTH``:
``ssh\\s+-R\\s+\\d+:`` is "ssh" and "-r"), since they only narrow rows the first
one let through. Rows with non-ASCII text are not decided by the
literals (the JVM prefilter lets them through: case folding and derivations
are only simple on ASCII). Derivations keep the condition: ``lower``/``upper``
do not change ``s.lower()``, ``trim`` keeps a substring, ``collapse_ws`` keeps
every run without whitespace (literals are then cut at whitespace).
"""

from __future__ import annotations

import re
import re._constants as C  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from functools import lru_cache

from etl.matching.ir import Const, FilterProgram, leaves
from etl.matching.ruletree import fold

MIN_LENGTH = 3  # shorter literals would let most rows through: no prefilter then
MAX_ALTERNATIVES = 64  # an alternation needing more literals than this needs nothing (keeps sets small)
_WS = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ")

Need = frozenset  # of literals; the match contains at least one of them


def _better(a: Need | None, b: Need | None) -> Need | None:
    """The more selective of two needs (longer shortest literal, then fewer literals)."""
    if a is None:
        return b
    if b is None:
        return a
    ka = (min(map(len, a)), -len(a))
    kb = (min(map(len, b)), -len(b))
    return a if ka >= kb else b


def _char(op, av) -> str | None:
    """The lower-case form shared by every ASCII character a node matches (an ASCII literal, or a class of
    ASCII literals that are one letter in several cases), else None. Case folding does not matter:
    every case variant of an ASCII letter has the same lower case, and non-ASCII text is not decided here."""
    if op is C.LITERAL:
        return chr(av).lower() if av < 0x80 else None
    if op is C.IN:
        items = list(av)
        if not items or any(iop is not C.LITERAL or iav >= 0x80 for iop, iav in items):
            return None  # NEGATE, ranges, categories, non-ASCII members
        low = {chr(iav).lower() for _, iav in items}
        return low.pop() if len(low) == 1 else None
    return None


def _options(items, flags: int, split_ws: bool, min_length: int) -> list[Need]:
    """Every need one mandatory part of a concatenation gives (each alone is a sound condition)."""
    out: list[Need] = []
    run: list[str] = []

    def close() -> None:
        nonlocal run
        if run:
            text = "".join(run)
            parts = re.split("[" + re.escape("".join(sorted(_WS))) + "]+", text) if split_ws else [text]
            out.extend(frozenset([p]) for p in parts if len(p) >= min_length)
        run = []

    for op, av in items:
        c = _char(op, av)
        if c is not None:
            run.append(c)
            continue
        close()
        need = _node(op, av, flags, split_ws, min_length)
        if need is not None:
            out.append(need)
    close()
    return out


def _seq(items, flags: int, split_ws: bool, min_length: int) -> Need | None:
    best: Need | None = None
    for need in _options(items, flags, split_ws, min_length):
        best = _better(best, need)
    return best


def _node(op, av, flags: int, split_ws: bool, min_length: int) -> Need | None:
    if op is C.SUBPATTERN:
        _gid, add, dele, sub = av
        return _seq(sub, (flags | add) & ~dele, split_ws, min_length)
    if op is C.BRANCH:
        out: set[str] = set()
        for branch in av[1]:
            need = _seq(branch, flags, split_ws, min_length)
            if need is None:
                return None
            out |= need
            if len(out) > MAX_ALTERNATIVES:
                return None
        return frozenset(out)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        lo, _hi, sub = av
        return _seq(sub, flags, split_ws, min_length) if lo >= 1 else None
    if op is C.ATOMIC_GROUP:
        return _seq(av, flags, split_ws, min_length)
    return None  # classes, any, anchors, lookaround, backreferences, conditionals: no literal needed


@lru_cache(maxsize=65536)
def literal_options(regex: str, flags: int = 0, split_ws: bool = False,
                    min_length: int = MIN_LENGTH) -> tuple[Need, ...]:
    """The needs of the pattern's mandatory top-level parts: for each, ``s.lower()`` contains one of its
    literals whenever ``re.search(regex, s, flags)`` matches ASCII ``s`` (empty: no such need found).

    ``split_ws``: no literal contains whitespace (for values derived with ``collapse_ws``)."""
    try:
        parsed = sre_parse.parse(regex, int(flags))
    except (re.error, OverflowError, RecursionError):
        return ()
    gflags = int(parsed.state.flags)
    try:
        return tuple(_options(list(parsed), gflags, split_ws, min_length))
    except RecursionError:
        return ()


def required_literals(regex: str, flags: int = 0, split_ws: bool = False,
                      min_length: int = MIN_LENGTH) -> Need | None:
    """The most selective need of ``literal_options`` by its own text (longest shortest literal), or None."""
    best: Need | None = None
    for need in literal_options(regex, flags, split_ws, min_length):
        best = _better(best, need)
    return best


SECONDARY_MIN_LENGTH = 2  # literals of a group's other needs (they only narrow what its first need lets through)
MAX_NEEDS = 3  # needs per pattern the JVM prefilter checks together (the most selective ones)
Group = tuple  # of Needs: a text satisfies a group when it contains one literal of EACH of its needs


def _rank(need: Need, shared: dict[str, int]) -> tuple:
    """Sort key, most selective first. A literal that many patterns of the set require is likely a common word
    (rules are often written as a common command plus a specific argument: ``kubectl\\s+-n\\s+x7q2``), so the
    need whose literals the fewest patterns share comes first, then the longest."""
    return (max(shared[x] for x in need), -min(map(len, need)), len(need), sorted(need))


def _pattern_options(program: FilterProgram, min_length: int,
                     secondary: int) -> tuple[list[str], list[tuple[tuple[Need, ...], tuple[Need, ...]]]] | None:
    """Per pattern leaf the rules need: its field, and (its needs of ``min_length`` literals, its needs of
    ``secondary`` ones)."""
    pattern_leaf: dict[int, tuple[str, tuple[str, ...], str, int]] = {}
    for db in program.databases:
        for p in db.patterns:
            for leaf in p.leaves:
                pattern_leaf[leaf] = (db.field, db.derivations, p.python_regex, p.python_flags)
    for f in program.fallbacks:
        pattern_leaf[f.leaf] = (f.field, f.derivations, f.python_regex, f.python_flags)
    if not program.rules:
        return None
    used: set[int] = set()
    for r in program.rules:
        r0 = fold(r.expr, lambda i: False if i in pattern_leaf else None)
        if not (isinstance(r0, Const) and r0.value is False):
            return None
        if isinstance(r.expr, Const):  # constant false: never matches, needs nothing
            continue
        used.update(x for x in leaves(r.expr) if x in pattern_leaf)
    fields: list[str] = []
    options: list[tuple[tuple[Need, ...], tuple[Need, ...]]] = []
    for leaf in sorted(used):
        field, derivations, regex, flags = pattern_leaf[leaf]
        if any(d not in ("lower", "upper", "trim", "collapse_ws") for d in derivations):
            return None
        ws = "collapse_ws" in derivations
        opts = literal_options(regex, flags, ws, min_length)
        if not opts:
            return None
        fields.append(field)
        options.append((opts, literal_options(regex, flags, ws, secondary) if secondary < min_length else opts))
    return fields, options


def program_literal_groups(program: FilterProgram, min_length: int = MIN_LENGTH, max_needs: int = MAX_NEEDS,
                           secondary_min_length: int = SECONDARY_MIN_LENGTH) -> dict[str, tuple[Group, ...]] | None:
    """Per field, groups of needs: a row can only match when, on some field, its text satisfies one of that
    field's groups (one group per pattern: its most selective need of ``min_length`` literals, then up to
    ``max_needs - 1`` others, of literals of at least ``secondary_min_length``, most selective first). Every
    need of a pattern holds whenever it matches, so all of them together do. None: no such condition (e.g. a
    rule that can match with every pattern false, or a pattern without literals)."""
    got = _pattern_options(program, min_length, min(min_length, secondary_min_length))
    if got is None:
        return None
    fields, options = got
    shared: dict[str, int] = {}
    for opts, more in options:
        for lit in {x for need in opts + more for x in need}:
            shared[lit] = shared.get(lit, 0) + 1
    out: dict[str, dict[Group, None]] = {}
    for field, (opts, more) in zip(fields, options, strict=True):
        first = min(set(opts), key=lambda n: _rank(n, shared))
        rest = sorted(set(more) - {first}, key=lambda n: _rank(n, shared))
        out.setdefault(field, {}).setdefault((first, *rest[:max_needs - 1]))
    return {f: tuple(gs) for f, gs in out.items()}


def program_literals(program: FilterProgram, min_length: int = MIN_LENGTH) -> dict[str, frozenset[str]] | None:
    """Per field, the literals one of which a row's text must contain for any rule to match: the most
    selective need of each pattern (None as for ``program_literal_groups``)."""
    groups = program_literal_groups(program, min_length, max_needs=1)
    return None if groups is None else {f: frozenset(x for g in gs for x in g[0]) for f, gs in groups.items()}
