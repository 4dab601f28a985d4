"""The filter optimizer: rules -> FilterProgram (../shared/ARCHITECTURE.md, "Filter optimizer").

``compile_rules`` lifts spec rules into the IR (:mod:`etl.matching.ir`) and
runs the passes in ``PASSES`` order, each a pure function FilterProgram ->
FilterProgram, one module per pass (sqlglot optimizer style). Several
programs over one input can then share one scan (:mod:`etl.optimize.sibling_merge`).
The matcher (:mod:`etl.matching.matcher`) runs a program over Arrow batches;
:mod:`etl.optimize.explain` renders it; :mod:`etl.optimize.reference` defines
what a rule means (null handling included).

Typical use (driver, then executors)::

    program = compile_rules(rules)            # once, on the driver; picklable
    text = explain(program)                   # etl explain
    reason = hyperscan_rejects(regex, caseless)   # etl validate (W301)

    def per_partition(batches):               # e.g. inside mapInArrow
        m = Matcher(program)                  # cheap: databases load once per process
        for batch in batches:
            yield apply_mode(batch, m.match(batch), "tag", "matched_rules")

Compile errors (bad regex, bad network) raise :class:`RuleCompileError` whose
``origin`` is a :class:`~etl.matching.ir.NodePath` (rule id + path in ``when``).
"""

from __future__ import annotations

from collections.abc import Sequence

from etl import diskcache
from etl.matching.ir import FilterProgram, RuleCompileError
from etl.matching.merged import MergedProgram
from etl.optimize.normalize import lift
from etl.optimize.passes import PASSES, Pass, run_passes
from etl.optimize.sibling_merge import merge_programs
from etl.regexes.hsregex import hyperscan_rejects
from etl.spec.rules import Rule


def compile_rules(rules: Sequence[Rule], upto: str | None = None, cache: bool = False) -> FilterProgram:
    """Compile a rule set into a FilterProgram (``upto``: stop after the pass of that name).

    ``cache=True``: a rule set of at least ``diskcache.MIN_RULES`` rules is looked up in (and
    stored into) the on-disk program cache (:mod:`etl.diskcache`)."""
    if upto is not None and upto not in {p.__name__ for p in PASSES}:
        raise ValueError(f"unknown pass {upto!r}")
    key = None
    if cache and upto is None and len(rules) >= diskcache.MIN_RULES and diskcache.cache_dir() is not None:
        key = diskcache.program_key(r.model_dump_json(by_alias=True) for r in rules)
        cached = diskcache.load_program(key)
        if isinstance(cached, FilterProgram):
            return cached
    program = _compile(rules, upto)
    if key is not None:
        diskcache.store_program(key, program)
    return program


def _compile(rules: Sequence[Rule], upto: str | None) -> FilterProgram:
    program = lift(list(rules))
    for p in PASSES:
        program = p(program)
        if p.__name__ == upto:
            break
    return program


__all__ = ["PASSES", "FilterProgram", "MergedProgram", "RuleCompileError", "compile_rules", "hyperscan_rejects",
           "merge_programs", "run_passes", "Pass"]
