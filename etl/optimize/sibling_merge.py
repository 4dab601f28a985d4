"""Sibling filters on one input share one scan.

``merge_programs`` concatenates the rules of several programs (in order) into
one program, re-planned from normalize on: a predicate or a sub-expression
used by two siblings becomes one bit, and each (field, derivations) gets one
Hyperscan database for all of them, so every value is scanned once for all
siblings. ``split_results`` gives each sibling its own MatchResult back
(rule indices and ids as in the sibling's own program).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from etl.optimize.ir import Const, Expr, FilterProgram, Not, Pred, PredicateInfo, RuleProgram


@dataclass(frozen=True)
class MergedProgram:
    program: FilterProgram
    spans: tuple[tuple[int, int], ...]  # rule index range [start, end) of each sibling
    members: tuple[FilterProgram, ...]


def _remap(e: Expr, m: dict[int, int]) -> Expr:
    if isinstance(e, Pred):
        return Pred(m[e.index], e.origin)
    if isinstance(e, Const):
        return e
    if isinstance(e, Not):
        return Not(_remap(e.child, m), e.origin)
    return type(e)(tuple(_remap(c, m) for c in e.children), e.origin)  # And / Or


def merge_programs(programs: Sequence[FilterProgram]) -> MergedProgram:
    from etl.optimize import run_passes

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


def split_results(merged: MergedProgram, result):
    """One MatchResult per sibling from the merged program's result."""
    from etl.optimize.matcher import MatchResult

    out = []
    for (start, end), prog in zip(merged.spans, merged.members):
        sel = (result.rules >= start) & (result.rules < end)
        u = (result.undecided_rules >= start) & (result.undecided_rules < end)
        out.append(MatchResult(result.num_rows, result.rows[sel], result.rules[sel] - start, prog.rule_ids,
                               result.undecided_rows[u], result.undecided_rules[u] - start))
    return out

