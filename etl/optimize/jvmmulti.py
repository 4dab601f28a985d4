"""A FilterProgram over several string fields for the JVM rule path (etl/jvm/RuleMatch.java): the program file.

:mod:`etl.optimize.jvmprogram` takes rule sets whose predicates are all patterns
on one field. This module takes rule sets over any number of string fields
whose predicates are patterns, string comparisons and null tests (Sigma rule
sets: ``Image`` ends with, ``CommandLine`` contains, ``OriginalFileName``
equals ...), each predicate read from its own field (the field's position in
:attr:`MultiPlan.fields`, the struct RuleMatch's ``anyRow``/``idsRow`` get).
Every field must be a string column (checked at compile time): a value is
then text or null, so ``eq``/``in`` members, ``ne`` values and range bounds
that are numbers or bools never equal a value (``ne`` holds on every text),
as in :mod:`etl.optimize.reference`.

The file is the format of :mod:`etl.optimize.jvmprogram` (its L, F, S, P and R
lines; a P line gets the field's position as a 7th item) plus:

    D <number of fields>
    G <F code point>:<the ASCII letter it matches caselessly>, ...  (hex)
    N <field> <kind> <predicates> <needle> <c or s> <anchor>
        a needle: kind e (equals), b (starts with), x (ends with), c (contains), caseless (c: ASCII letters
        fold; the needle's other characters have no case variants in Python, else it is a pattern) or cased.
        It is found through its 3 bytes at the anchor (ASCII letters lower-cased; -1: shorter than 3 bytes,
        checked on every value). On a value holding an F code point, caseless needles are compared with the
        value whose F code points are replaced by their ASCII letters (exact: no needle character is one).
    U <field> <n or v> <predicates>     is null / is not null
    K <field> <other field> <predicates> <c or s>   equals the other field's value (c: caselessly, through
                                        the H line: each character Python matches caselessly with others ->
                                        the least of them)
    C <field> <op> <predicates> <text>  gt, ge, lt, le against a text, in code point (UTF-8 byte) order
    I <field> <predicates> <version>:<address, hex>:<prefix>;...   cidr: the text is an address (as Python's
                                        ipaddress.ip_address reads it) in one of the networks

An R line has a 5th item, its trigger groups: predicates, comma-separated, groups separated by ``;``
(etl.optimize.jvmmulti._triggers): the rule is evaluated on a row only when a predicate of each group holds.
A needle or pattern none of whose predicates is in a group is decided only when an evaluated rule reads it.

``ne`` on text is written into the trees as ``and(not null, not equal)`` over
an extra predicate (L counts them). Derivations (``apply``) keep the
rule set on the Python path: :func:`multi_plan` says why.
"""

from __future__ import annotations

import ipaddress
import re
import re._constants as C  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from collections.abc import Callable

from etl.regexes.hsregex import class_ranges, literal_ranges, op_regex
from etl.matching.ir import And, Const, Expr, FilterProgram, Not, Pred
from etl.regexes.javaregex import shared, translate, unsupported_reason
from etl.optimize.jvmprogram import hex_escape, literal_units, tree_of, folding_into_ascii
from etl.optimize.literals import MAX_NEEDS, literal_options
from etl.matching.ruletree import fold

_NEEDLE_KIND = {"eq": "e", "starts_with": "b", "ends_with": "x", "contains": "c"}
_CMP = ("gt", "ge", "lt", "le")


@dataclass(frozen=True)
class MultiPlan:
    fields: tuple[str, ...]  # the fields the program reads, in the order of the struct RuleMatch gets
    body: str | None  # the program file's text; None when the program is not eligible
    reason: str | None = None  # why not
    regexes: tuple[str, ...] = ()  # the patterns it runs (Python regex text), in the program file's order
    needles: int = 0  # the string comparisons it makes (N lines)


def _fold_trivial(s: str) -> bool:
    """Does a byte comparison with ASCII letters lower-cased decide Python's caseless match of this needle, on
    values without F code points? (each non-ASCII character matches only itself)"""
    return all(ord(c) < 0x80 or literal_ranges(ord(c), re.IGNORECASE) == ((ord(c), ord(c)),) for c in s)


def _gram(b: bytes, k: int) -> bytes:
    return b[k:k + 4].lower()


_COMMON = frozenset(b"\\.:/ -_eiaosntrlcmwdx")


def _common(window: bytes) -> int:
    """How ordinary the bytes are in paths and command lines (a needle is found through its least ordinary)."""
    return sum(1 for x in window.lower() if x in _COMMON)


class _Writer:
    def __init__(self, program: FilterProgram):
        self.program = program
        self.fields: list[str] = sorted({p.key.field for p in program.predicates}
                                        | {p.key.value for p in program.predicates if p.key.op == "fieldref"})
        self.caseless_refs = False
        self.lines: list[str] = []
        self.classes: dict[int, str] = {}
        self.regexes: list[str] = []
        self.needles: dict[tuple, list[int]] = {}  # (field, kind, caseless, needle) -> predicates
        self.extra = len(program.predicates)
        self.rewrite: dict[int, Expr] = {}
        self.unscanned: set[int] = set()  # predicates decided by a pattern that runs on every value (no literal)

    def pattern(self, leaves: list[int], field: int, regex: str, flags: int) -> None:
        why = unsupported_reason(regex, flags, deep=True)
        if why is not None:
            raise _Unfit(f"pattern {regex!r} has {why}")
        t = translate(regex, flags, deep=True)
        for n, text in shared(t.ascii + t.unicode).items():
            if n not in self.classes:
                self.classes[n] = text
                self.lines.append(f"S {n} {hex_escape(text)}")
        needs = _needs(regex, flags)
        if needs in ("-", "u") or needs.startswith("*"):
            self.unscanned.update(leaves)
        self.lines.append(f"P {','.join(map(str, leaves))} {hex_escape(t.ascii)} {hex_escape(t.unicode)} "
                          f"{needs} {'c' if t.caseless else 's'} {field}")
        self.regexes.append(regex)

    def predicate(self, index: int) -> None:
        key = self.program.predicates[index].key
        if key.derivations:
            raise _Unfit(f"a derivation ({', '.join(key.derivations)}) of field {key.field}")
        f = self.fields.index(key.field)
        op, v = key.op, key.value
        if op == "is_null":
            self.lines.append(f"U {f} n {index}")
        elif op in ("not_null", "has_text"):
            self.lines.append(f"U {f} v {index}")
        elif op in _CMP:
            if isinstance(v, str):  # a number bound never holds on text
                self.lines.append(f"C {f} {op} {index} {hex_escape(v)}")
        elif op in ("eq", "in"):
            for member in (v if op == "in" else (v,)):
                if isinstance(member, str):
                    self.needle(index, f, "eq", member, key.caseless)
        elif op == "ne":
            if not isinstance(v, str):
                self.lines.append(f"U {f} v {index}")  # text never equals a number or a bool
                return
            not_null, equal = self.extra, self.extra + 1
            self.extra += 2
            self.lines.append(f"U {f} v {not_null}")
            self.needle(equal, f, "eq", v, key.caseless)
            self.rewrite[index] = And((Pred(not_null), Not(Pred(equal))))
        elif op == "cidr":
            nets = [ipaddress.ip_network(n, strict=False) for n in (v if isinstance(v, tuple) else (v,))]
            self.lines.append(f"I {f} {index} " + ";".join(
                f"{n.version}:{int(n.network_address):0{8 if n.version == 4 else 32}x}:{n.prefixlen}" for n in nets))
        elif op == "fieldref":
            self.lines.append(f"K {f} {self.fields.index(v)} {index} {'c' if key.caseless else 's'}")
            self.caseless_refs |= key.caseless
        elif op in ("regex", "like"):
            self.pattern([index], f, op_regex(op, v), re.IGNORECASE if key.caseless else 0)
        elif op in _NEEDLE_KIND:
            self.needle(index, f, op, v, key.caseless)
        else:
            raise _Unfit(f"{op} predicates run in the Python matcher")

    def needle(self, leaf: int, field: int, op: str, text: str, caseless: bool) -> None:
        if caseless and not _fold_trivial(text):  # a character with case variants beyond ASCII: a pattern
            regex = "\\A(?:" + re.escape(text) + ")\\Z" if op == "eq" else op_regex(op, text)
            self.pattern([leaf], field, regex, re.IGNORECASE)
            return
        self.needles.setdefault((field, _NEEDLE_KIND[op], caseless, text), []).append(leaf)

    def write_needles(self) -> None:
        uses: Counter = Counter()
        anchors: dict[tuple, int] = {}
        for key in self.needles:
            field, kind, _c, text = key
            b = text.encode("utf-8")
            if kind == "c":
                uses.update((field, _gram(b, k)) for k in range(len(b) - 3))
        for key in self.needles:
            field, kind, _c, text = key
            b = text.encode("utf-8")
            if kind == "c":
                # 4 bytes (3 for a needle of 3): those least common in paths and command lines, then least shared
                # with other needles: fewer values and needles to compare on a hit
                options = range(len(b) - 3) or range(len(b) - 2)
                anchors[key] = min(options, key=lambda k: (_common(b[k:k + 4]), uses[(field, _gram(b, k))], k),
                                   default=-1)
            elif kind == "x":
                anchors[key] = len(b) - 3 if len(b) >= 3 else -1
            else:
                anchors[key] = 0 if len(b) >= 3 else -1
        for key, preds in self.needles.items():
            field, kind, caseless, text = key
            self.lines.append(f"N {field} {kind} {','.join(map(str, preds))} {hex_escape(text) or '-'} "
                              f"{'c' if caseless else 's'} {anchors[key]}")

    def tree(self, e: Expr) -> Expr:
        if isinstance(e, Pred):
            return self.rewrite.get(e.index, e)
        if isinstance(e, Not):
            return Not(self.tree(e.child))
        if isinstance(e, Const):
            return e
        return type(e)(tuple(self.tree(c) for c in e.children))


def _needs(regex: str, flags: int) -> str:
    """jvmprogram's needs of the pattern; else ``u`` when it cannot match an ASCII value; else ``*;`` and needs
    of 1 or 2 characters (checked before the pattern runs); else ``-`` (it runs on every value)."""
    got = literal_units(regex, flags)
    if got != "-":
        return got
    parsed = sre_parse.parse(regex, flags)
    if _no_ascii(list(parsed), int(parsed.state.flags)):
        return "u"
    short = sorted(literal_options(regex, flags, False, 1), key=lambda n: (-min(map(len, n)), len(n), sorted(n)))
    if not short:
        return "-"
    return "*;" + ";".join(",".join(hex_escape(x) for x in sorted(need)) for need in short[:MAX_NEEDS])


def _no_ascii(items: list, flags: int) -> bool:
    """Does every match of the sequence hold a non-ASCII character? (a mandatory part that matches none)"""
    for op, av in items:
        if op is C.LITERAL and all(lo >= 0x80 for lo, _hi in literal_ranges(av, flags)):
            return True
        if op is C.IN and all(lo >= 0x80 for lo, _hi in class_ranges(av, flags)):
            return True
        if op is C.SUBPATTERN and _no_ascii(list(av[3]), (flags | av[1]) & ~av[2]):
            return True
        if op is C.BRANCH and all(_no_ascii(list(b), flags) for b in av[1]):
            return True
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1 and _no_ascii(list(av[2]), flags):
            return True
    return False


MAX_TRIGGER_GROUPS = 3


class _Likely:
    """A guess of how often each predicate holds, from the rule set alone: a null test often, an equality
    rarely, a needle the less often the longer it is -- and the more often the more of the rule set's needles
    (of any field) hold its text: the text is then generic, as `\\Windows\\`, `.exe` or `System` are in Windows
    events (the rules name such paths and names everywhere), a text few needles share is specific. How many
    needles hold a text: for 4 characters or more, the fewest needles holding one of its 4-grams (a bound), for
    shorter ones the needles holding it."""

    def __init__(self, program: FilterProgram):
        self.program = program
        texts = {v.lower() for p in program.predicates for v in _texts(p.key)}
        self.grams: Counter = Counter(g for t in texts for g in {t[k:k + 4] for k in range(len(t) - 3)})
        self.short = sorted(texts)
        self.memo: dict[str, int] = {}

    def holders(self, text: str) -> int:
        t = text.lower()
        got = self.memo.get(t)
        if got is None:
            if len(t) >= 4:
                got = min(self.grams[t[k:k + 4]] for k in range(len(t) - 3))
            else:
                got = sum(1 for x in self.short if t in x)
            self.memo[t] = got
        return got

    def __call__(self, i: int) -> float:
        if i >= len(self.program.predicates):
            return 1.0
        key = self.program.predicates[i].key
        if key.op in ("is_null", "not_null", "has_text", "ne"):
            return 1.0
        texts = _texts(key)
        if key.op in ("eq", "in"):
            return sum(0.01 * (1 + self.holders(v)) ** 0.5 for v in texts) if texts else 0.0
        if key.op in _NEEDLE_KIND and texts:
            return 4.0 / (len(texts[0]) + 1) ** 2 * (1 + self.holders(texts[0])) ** 0.5
        return 0.9  # a pattern: run on every value holding its literals when a trigger; decided on demand else


def _texts(key: Any) -> list[str]:
    """The texts a string comparison predicate compares with (none for other predicates)."""
    if key.op == "in" and isinstance(key.value, tuple):
        return [v for v in key.value if isinstance(v, str)]
    if key.op in ("eq", "ne", *_NEEDLE_KIND) and isinstance(key.value, str):
        return [key.value]
    return []


def _triggers(tree: Expr, likely: _Likely, unscanned: Callable[[int], bool]) -> list[list[int]] | None:
    """Groups of predicates, each from a mandatory part of the rule (a conjunct of its top-level `and`, nested
    `and`s flattened): when the rule holds, a predicate of each group does, so the rule is evaluated only on rows
    where one of each holds. The likely rarest part first, then up to MAX_TRIGGER_GROUPS - 1 others without a
    pattern that runs on every value (`unscanned`: a group's predicates are looked for in every value: a string
    comparison is found by the scan of its field anyway, a pattern with literals runs only on values holding
    them, a pattern not in a group runs only when a rule reads it). None: every predicate of the rule, one group
    (no such part)."""
    parts = [p for p in map(lambda c: _part(c, likely), _conjuncts(tree)) if p is not None and p[1]]
    if not parts:
        return None
    parts.sort(key=lambda p: p[0])
    more = [ls for _s, ls in parts[1:] if not any(unscanned(i) for i in ls)]
    return [parts[0][1]] + more[:MAX_TRIGGER_GROUPS - 1]


def _conjuncts(e: Expr) -> list[Expr]:
    """The parts that must each hold when `e` does: the children of an `and`, theirs when they are `and`s."""
    return [x for c in e.children for x in _conjuncts(c)] if isinstance(e, And) else [e]


def _part(e: Expr, likely: _Likely) -> tuple[float, list[int]] | None:
    """(likelihood, predicates) such that when `e` holds one of the predicates does, the likely rarest found:
    a predicate itself; for `or` every child's; for `and` its rarest child's. None: `e` can hold without any
    (a `not`, a constant true)."""
    if isinstance(e, Pred):
        return likely(e.index), [e.index]
    if isinstance(e, Const):
        return None if e.value else (0.0, [])
    if isinstance(e, And):
        got = [p for p in (_part(c, likely) for c in e.children) if p is not None]
        return min(got, key=lambda p: p[0]) if got else None
    if isinstance(e, Not):
        return None
    score, out = 0.0, {}
    for c in e.children:  # or
        p = _part(c, likely)
        if p is None:
            return None
        score += p[0]
        out.update(dict.fromkeys(p[1]))
    return score, list(out)


@lru_cache(maxsize=1)
def caseless_classes() -> dict[int, int]:
    """Each character Python's re matches caselessly with others -> the least of them (when not itself): two
    texts are caselessly equal (etl.optimize.reference) when their characters map to the same ones."""
    import _sre

    out = {}
    for c in range(0x110000):
        if _sre.unicode_iscased(c):
            least = min(lo for lo, _hi in literal_ranges(c, re.IGNORECASE))
            if least != c:
                out[c] = least
    return out


def _ascii_of(c: int) -> str:
    """The ASCII letter (lower case) Python matches caselessly with the non-ASCII character c."""
    return next(chr(a) for a in range(ord("a"), ord("z") + 1) if any(lo <= c <= hi for lo, hi in literal_ranges(a, re.IGNORECASE)))


class _Unfit(Exception):
    pass


def multi_plan(program: FilterProgram) -> MultiPlan:
    """The program file for RuleMatch's several-field entries, or why the program stays on the Python path."""
    w = _Writer(program)
    try:
        for p in program.predicates:
            w.predicate(p.index)
        w.write_needles()
    except _Unfit as e:
        return MultiPlan(tuple(w.fields), None, str(e))
    folds = folding_into_ascii()
    head = [f"L {w.extra}", "F " + ",".join(f"{c:x}" for c in folds),
            "G " + ",".join(f"{c:x}:{ord(_ascii_of(c)):x}" for c in folds), f"D {len(w.fields)}"]
    if w.caseless_refs:
        head.append("H " + ",".join(f"{c:x}:{r:x}" for c, r in caseless_classes().items()))
    likely = _Likely(program)
    for r in program.rules:
        empty = fold(r.expr, lambda i: False)
        always = not (isinstance(empty, Const) and empty.value is False)
        toks: list[str] = []
        tree = w.tree(r.expr)
        tree_of(tree, toks)
        trig = _triggers(tree, likely, w.unscanned.__contains__)
        w.lines.append(f"R {hex_escape(r.rule_id)} {int(always)} {','.join(toks)}"
                       + ("" if trig is None else " " + ";".join(",".join(map(str, g)) for g in trig)))
    return MultiPlan(tuple(w.fields), "\n".join(head + w.lines) + "\n", regexes=tuple(w.regexes),
                     needles=len(w.needles))
