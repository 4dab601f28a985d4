"""Sibling filters sharing one pass: the merged program and the split of its result (run on executors).

The optimizer builds a MergedProgram (:func:`etl.optimize.sibling_merge.merge_programs`);
``split_results`` gives each sibling its own MatchResult back (rule indices and
ids as in the sibling's own program).
"""

from __future__ import annotations

from dataclasses import dataclass

from etl.matching.ir import FilterProgram


@dataclass(frozen=True)
class MergedProgram:
    program: FilterProgram
    spans: tuple[tuple[int, int], ...]  # rule index range [start, end) of each sibling
    members: tuple[FilterProgram, ...]


def split_results(merged: MergedProgram, result):
    """One MatchResult per sibling from the merged program's result."""
    from etl.matching.matcher import MatchResult

    out = []
    for (start, end), prog in zip(merged.spans, merged.members, strict=True):
        sel = (result.rules >= start) & (result.rules < end)
        u = (result.undecided_rules >= start) & (result.undecided_rules < end)
        out.append(MatchResult(result.num_rows, result.rows[sel], result.rules[sel] - start, prog.rule_ids,
                               result.undecided_rows[u], result.undecided_rules[u] - start))
    return out
