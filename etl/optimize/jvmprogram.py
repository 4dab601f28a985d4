"""A FilterProgram for the JVM rule path (etl/jvm/RuleMatch.java): eligibility and the program file.

A program runs in the JVM, without a Python worker, when every predicate of its
rules is a pattern predicate (the Hyperscan patterns and the fallbacks alike:
each one's reference meaning is ``re.search(python_regex, value,
python_flags)``) on one and the same string field, without derivations, and
every pattern translates exactly to java.util.regex (:mod:`etl.optimize.
javaregex`). Anything else (native predicates such as ``eq``/``in``/ranges/
``cidr``, derivations, several fields, backreferences ...) keeps the rule set
on the Python path (Hyperscan in mapInArrow workers), and :func:`jvm_plan`
says why.

The file is ASCII text, a line per item, strings hex-encoded UTF-8:

    L <number of predicates>
    F <code points, hex, comma-separated>
    S <number> <class>          (a long character class the patterns write as @number@)
    P <predicates it decides, comma-separated> <ascii form> <unicode form> <needs or -> <c or s>
    R <rule id> <1 if the rule can hold with every predicate false, else 0> <tree>

A pattern's literals are its needs (etl.optimize.literals), separated by ``;``:
an ASCII value it matches contains, lower-cased, one literal of each. The first
need's literals have 3 characters or more and index the pattern; the others
(up to two, of 2 characters or more) are checked before the regex runs. ``-``:
none known (the pattern runs on every value). ``s``: the pattern is case
sensitive, so the literals hold on every value (a run of literal characters
appears as it is); ``c``: some part is caseless, so its literals hold on
values without the ``F`` code points: the non-ASCII characters that Python
matches caselessly with an ASCII one (the Kelvin sign with k, the long s with
s, dotted and dotless i with i); a value holding one runs the pattern whatever
it holds.
A tree is its nodes in prefix
order, comma-separated: ``P<predicate>``, ``T``, ``F``, ``N`` (not), ``A<n>``/
``O<n>`` (and/or of the next n subtrees).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from etl.matching.ir import And, Const, Expr, FilterProgram, Not, Pred, leaves
from etl.matching.ruletree import fold
from etl.optimize.literals import MAX_NEEDS, MIN_LENGTH, SECONDARY_MIN_LENGTH, literal_options, required_literals
from etl.regexes.hsregex import literal_ranges
from etl.regexes.javaregex import shared, translate, unsupported_reason


@dataclass(frozen=True)
class JvmPlan:
    field: str | None  # the field every pattern reads (None: the program reads no field)
    body: str | None  # the program file's text; None when the program is not eligible
    reason: str | None = None  # why not
    regexes: tuple[str, ...] = ()  # the patterns it runs (Python regex text), in the program file's order

    @property
    def patterns(self) -> int:
        return len(self.regexes)


def hex_escape(s: str) -> str:
    return s.encode("utf-8").hex()


def tree_of(e: Expr, out: list[str]) -> None:
    if isinstance(e, Pred):
        out.append(f"P{e.index}")
    elif isinstance(e, Const):
        out.append("T" if e.value else "F")
    elif isinstance(e, Not):
        out.append("N")
        tree_of(e.child, out)
    else:
        out.append(("A" if isinstance(e, And) else "O") + str(len(e.children)))
        for c in e.children:
            tree_of(c, out)


def literal_units(regex: str, flags: int) -> str:
    first = required_literals(regex, flags, min_length=MIN_LENGTH)
    if not first:
        return "-"
    others = [n for n in literal_options(regex, flags, False, SECONDARY_MIN_LENGTH) if n != first]
    others.sort(key=lambda n: (-min(map(len, n)), len(n), sorted(n)))
    return ";".join(",".join(hex_escape(x) for x in sorted(need)) for need in [first, *others[:MAX_NEEDS - 1]])


@lru_cache(maxsize=1)
def folding_into_ascii() -> tuple[int, ...]:
    """The non-ASCII code points Python's re matches caselessly with some ASCII character."""
    out: set[int] = set()
    for a in range(0x80):
        for lo, hi in literal_ranges(a, int(re.IGNORECASE)):
            out.update(c for c in range(max(lo, 0x80), hi + 1))
    return tuple(sorted(out))


def jvm_plan(program: FilterProgram) -> JvmPlan:
    """The program file for RuleMatch, or why the program stays on the Python path."""
    if program.natives:
        return JvmPlan(None, None, "native predicates (eq, in, ranges, null tests, cidr) run in the Python matcher")
    served: dict[int, int] = {}
    patterns: list[tuple[tuple[int, ...], str, int]] = []
    fields: set[str] = set()
    sources = [(db.field, db.derivations, p.leaves, p.python_regex, p.python_flags)
               for db in program.databases for p in db.patterns]
    sources += [(f.field, f.derivations, (f.leaf,), f.python_regex, f.python_flags) for f in program.fallbacks]
    for field, derivations, decides, regex, flags in sources:
        if derivations:
            return JvmPlan(None, None, f"a derivation ({', '.join(derivations)}) of field {field}")
        why = unsupported_reason(regex, flags)
        if why is not None:
            return JvmPlan(None, None, f"pattern {regex!r} has {why}")
        fields.add(field)
        for leaf in decides:
            served[leaf] = len(patterns)
        patterns.append((tuple(decides), regex, flags))
    if len(fields) > 1:
        return JvmPlan(None, None, "patterns read several fields (" + ", ".join(sorted(fields)) + ")")
    used = {i for r in program.rules for i in leaves(r.expr)}
    missing = sorted(used - served.keys())
    if missing:
        return JvmPlan(None, None, f"predicate p{missing[0]} is not a pattern")
    lines = [f"L {len(program.predicates)}", "F " + ",".join(f"{c:x}" for c in folding_into_ascii())]
    classes: dict[int, str] = {}
    for decides, regex, flags in patterns:
        t = translate(regex, flags)
        for n, text in shared(t.ascii + t.unicode).items():
            if n not in classes:
                classes[n] = text
                lines.append(f"S {n} {hex_escape(text)}")
        lines.append(f"P {','.join(map(str, decides))} {hex_escape(t.ascii)} {hex_escape(t.unicode)} {literal_units(regex, flags)} "
                     f"{'c' if t.caseless else 's'}")
    for r in program.rules:
        empty = fold(r.expr, lambda i: False)
        always = not (isinstance(empty, Const) and empty.value is False)
        toks: list[str] = []
        tree_of(r.expr, toks)
        lines.append(f"R {hex_escape(r.rule_id)} {int(always)} {','.join(toks)}")
    return JvmPlan(next(iter(fields), None), "\n".join(lines) + "\n", regexes=tuple(r for _, r, _ in patterns))

