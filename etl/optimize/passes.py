"""The optimizer's passes in order: each a pure function FilterProgram -> FilterProgram, one module per pass.

``etl.optimize.compile_rules`` runs them after lifting rules into the IR; ``run_passes`` re-plans a program from one
pass on (``etl.optimize.sibling_merge``: the merged program of sibling filters, from normalize).
"""

from __future__ import annotations

from collections.abc import Callable

from etl.matching.ir import FilterProgram
from etl.optimize.fallback import fallback
from etl.optimize.fingerprint import fingerprint
from etl.optimize.merge_by_field import merge_by_field
from etl.optimize.native_split import native_split
from etl.optimize.normalize import normalize

Pass = Callable[[FilterProgram], FilterProgram]

PASSES: tuple[Pass, ...] = (
    normalize,
    native_split,
    merge_by_field,
    fallback,
    fingerprint,
)


def run_passes(program: FilterProgram, start: str) -> FilterProgram:
    """Run the passes from ``start`` on (used to re-plan a merged program)."""
    names = [p.__name__ for p in PASSES]
    for p in PASSES[names.index(start):]:
        program = p(program)
    return program
