"""Sibling filters on one input share one scan.

``merge_programs`` concatenates the rules of several programs (in order) into
one program, re-planned from normalize on: a predicate or a sub-expression
used by two siblings becomes one bit, and each (field, derivations) gets one
Hyperscan database for all of them, so every value is scanned once for all
siblings. The executors split the merged result back per sibling
(:func:`etl.matching.merged.split_results`).
"""

from __future__ import annotations

from dataclasses import replace
from collections.abc import Sequence

from etl.matching.ir import Const, Expr, FilterProgram, Not, Pred, PredicateInfo, RuleProgram
from etl.matching.merged import MergedProgram
from etl.optimize.passes import run_passes


def _remap(e: Expr, m: dict[int, int]) -> Expr:
    if isinstance(e, Pred):
        return Pred(m[e.index], e.origin)
    if isinstance(e, Const):
        return e
    if isinstance(e, Not):
        return Not(_remap(e.child, m), e.origin)
    return type(e)(tuple(_remap(c, m) for c in e.children), e.origin)  # And / Or


def merge_programs(programs: Sequence[FilterProgram]) -> MergedProgram:
    if not programs:
        raise ValueError("nothing to merge")
    preds: list[PredicateInfo] = []
    by_fp: dict[str, int] = {}
    rules: list[RuleProgram] = []
    spans = []
    for prog in programs:
        if "normalize" not in prog.passes:
            raise ValueError("merge_programs needs normalized programs")
        m: dict[int, int] = {}
        for p in prog.predicates:
            idx = by_fp.get(p.fingerprint)
            if idx is None:
                idx = by_fp[p.fingerprint] = len(preds)
                preds.append(replace(p, index=idx))
            m[p.index] = idx
        start = len(rules)
        for r in prog.rules:
            rules.append(replace(r, index=len(rules), expr=_remap(r.expr, m)))
        spans.append((start, len(rules)))
    lifted = FilterProgram(rules=tuple(rules), predicates=tuple(preds), passes=("lift", "sibling_merge"))
    return MergedProgram(run_passes(lifted, "normalize"), tuple(spans), tuple(programs))

