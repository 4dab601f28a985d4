"""grokvm: a fast, exact matcher for expanded grok regexes, with fallback to the real engine.

``compile_program(regex)`` turns a Python regex (``etl.grok.expand(p).python_regex``) into a
``Program``: a few DFAs plus a small WALKER TREE; ``Program.to_bytes()`` is what the Java
runtime executes (format: ``etl.grokvm.codec``; evaluation rules: ``etl.grokvm.runtime``).
``run(program, line_bytes)`` is the reference runtime: it returns the spans of groups
1..ngroups that ``re.match(regex, line, flags)`` would give, or ``FALLBACK`` (non-ASCII
line, no match at position 0, or anything the walker cannot be sure of). It never returns
a wrong answer. Whatever the compiler cannot handle raises ``Unsupported`` (with a reason):
the caller then uses the real engine for every line.

Design, and why it is exact. A backtracking engine (Python ``re``; ``java.util.regex``
behaves the same on ASCII text, up to the byte-level differences below) returns the FIRST successful path in priority
(depth-first) order. The walker goes left to right and never backtracks:

1. at every choice point (alternation option, another greedy iteration) it takes the first
   option that can match AT ALL at the current position (followed by a short prefix of what
   comes next), decided exactly: either by a PROBE DFA over a superset language (captures
   removed, atomic groups as ordinary groups, general lookaheads dropped), whose "no" is
   therefore exact, or by trying an option that fails "softly" (it cannot match, and has
   changed nothing);
2. capture-free pieces (LEAVES) run as one first-match DFA each, which returns the end of
   the piece's own first successful path (leftmost-first priorities, assertions resolved
   from the neighbouring bytes of the actual line);
3. once it has committed to a choice, any failure returns FALLBACK.

If the walk succeeds, every path that precedes its path in priority order diverges from
it at some choice point by taking an earlier option, and that option could not match at
all there (probe "no" / soft failure), or diverges inside a leaf, where the DFA has shown
that those paths fail within the leaf: all of them fail. So the walker's path is the first
successful one, i.e. the backtracker's result, captures included. Atomic groups only cut
paths that come AFTER the first success of their body; the walker's path goes through the
first success of each atomic body (by the same argument applied to the body alone), so it
survives the cuts: the walker can treat atomic groups transparently. Inside a leaf an
atomic group may be run as an ordinary group only where that is exact (nothing follows it
in the leaf, or its body has no choices); elsewhere the leaf is split. Fusion of a capture
with the fixed-width text after it (``%{DATA:x}"``: one DFA for ``.*?"``, capture end = DFA
end - 1) is exact because the first path of ``content T`` is the backtracker's first
content path that T can follow. Likewise a capture of one repeated byte set followed by
more pattern (``%{PROG:p}(?:\\[%{POSINT:pid}\\])?:``) tries its candidate ends in the
backtracker's order with a probe of the rest (SCAN).

Lines are left to the real engine when empty, non-ASCII, or containing a byte on which
Python's ``re`` and ``java.util.regex`` may disagree for this regex (``Program.fallback``:
``\\x1c``-``\\x1f`` when ``\\s`` is used, ``\\r`` with ``$``/MULTILINE anchors/non-DOTALL ``.``,
letters matched only through Unicode case folding): the differences known to us between
the two engines cannot show in a fast-path answer.

Modules: ``ir`` (parse to IR), ``props`` (predicates, rewrites), ``dfa`` (DFA construction),
``walker`` (walker tree, Program assembly), ``codec`` (Program, binary format),
``runtime`` (reference runtime).

Supported: literals, classes (``\\d \\w \\s``, negations, ranges), ``.``, alternation, groups,
greedy/lazy/possessive repeats, atomic groups, ``\\b \\B ^ \\A \\Z`` (``$`` too, and ``^``/``$`` with
MULTILINE), lookaheads (one-character ones inside DFAs, others at walker level, without
captures), one-character lookbehinds, IGNORECASE and DOTALL. Unsupported: backreferences,
conditionals, wider lookbehinds, captures inside lookarounds, repeats (max > 1) whose body
can match empty, lazy repeats around captures, LOCALE, DFAs above 20,000 states.
"""
from __future__ import annotations

import re
import time

from . import dfa, ir, props
from .codec import DFA, FormatError, Program
from .ir import Unsupported
from .runtime import FALLBACK, dfa_run, run, run_full
from .walker import assemble

__all__ = ["compile_program", "Unsupported", "FALLBACK", "run", "run_full", "Program", "DFA",
           "FormatError", "dfa_run", "compile_leaf"]


def compile_program(python_regex: str, flags: int = 0, dotall: bool = True) -> Program:
    """Compile ``python_regex`` (as ``re.compile(python_regex, flags | DOTALL if dotall)``
    would read it) into a Program; raise Unsupported if it cannot be run exactly."""
    t0 = time.perf_counter()
    try:
        x, ngroups, dialect = ir.parse(python_regex, flags | (re.DOTALL if dotall else 0))
        x = props.simplify(x)
        props.check(x)
        prog, times = assemble(x, ngroups)
        prog.fallback = dialect
    except RecursionError:
        raise Unsupported("regex nests too deeply") from None
    finally:
        props.clear_caches()
    prog.compile_seconds = time.perf_counter() - t0  # type: ignore[attr-defined]
    prog.dfa_seconds = times  # type: ignore[attr-defined]
    return prog


def compile_leaf(python_regex: str, flags: int = 0, probe: bool = False) -> DFA:
    """One DFA for a capture-free regex (tests, diagnostics). ``probe=False``: first-match
    end; ``probe=True``: ">= 0 iff some match starts here"."""
    try:
        x, _, _ = ir.parse(python_regex, flags)
        x = props.simplify(x)
        props.check(x)
        if props.has_cap(x) or props.has_look(x) or not props.atomic_ok(x, True):
            raise Unsupported("not a leaf: captures, general lookaheads or inner atomic groups")
        return dfa.build(props.strip(x) if probe else x, probe=probe, note=python_regex)
    finally:
        props.clear_caches()
