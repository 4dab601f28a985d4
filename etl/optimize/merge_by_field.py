"""Pass 3: all pattern predicates on one (field, derivations) go into one Hyperscan database.

regex, like, contains, starts_with and ends_with are first written as the
Python regex whose ``re.search`` is their meaning (``like`` -> anchored
``(?s)`` regex, literals escaped with ``re.escape``), then translated to a
Hyperscan expression with the same meaning (see :mod:`etl.regexes.hsregex`):
HS_FLAG_UTF8 | HS_FLAG_SINGLEMATCH always, HS_FLAG_CASELESS when caseless,
HS_FLAG_DOTALL when the pattern is in dot-all mode. Identical expressions are
stored once and serve every predicate that needs them.

Patterns with no Hyperscan form at all (they can match the empty string only at
some positions) go straight to the fallback list; Hyperscan's own compile check
is the next pass.
"""

from __future__ import annotations

import re

from etl.matching.ir import FallbackPattern, FilterProgram, HsPattern, PatternDatabase
from etl.regexes.hsregex import op_regex, plan_pattern
from etl.spec.rules import PATTERN_OPS


def python_pattern(op: str, value: str, caseless: bool) -> tuple[str, int]:
    """(regex, flags) whose ``re.search`` is the meaning of a pattern predicate."""
    return op_regex(op, value), re.IGNORECASE if caseless else 0


def merge_by_field(program: FilterProgram) -> FilterProgram:
    groups: dict[tuple[str, tuple[str, ...]], list] = {}
    fallbacks = list(program.fallbacks)
    for p in program.predicates:
        if p.key.op not in PATTERN_OPS:
            continue
        regex, flags = python_pattern(p.key.op, p.key.value, p.key.caseless)
        plan = plan_pattern(regex, flags, check=False)
        if plan.kind != "hyperscan":
            fallbacks.append(FallbackPattern(p.index, p.key.field, p.key.derivations, regex, flags,
                                             plan.reason or "no Hyperscan form", p.rules, p.origin))
            continue
        groups.setdefault((p.key.field, p.key.derivations), []).append((p, regex, flags, plan.translation))
    databases = []
    for (field, derivs), items in groups.items():
        by_expr: dict[tuple, list] = {}
        for p, regex, flags, t in items:
            exact = t.exact
            k = (t.expression, t.flags, t.ascii_rows, t.other_rows) + (() if exact else (regex, flags))
            by_expr.setdefault(k, []).append((p, regex, flags, t))
        patterns = []
        for pid, group in enumerate(by_expr.values()):
            p0, regex, flags, t = group[0]
            patterns.append(HsPattern(
                pattern_id=pid,
                expression=t.expression.encode("utf-8"),
                flags=t.flags,
                leaves=tuple(p.index for p, *_ in group),
                serves=tuple(p.fingerprint for p, *_ in group),
                python_regex=regex,
                python_flags=flags,
                ascii_rows=t.ascii_rows,
                other_rows=t.other_rows,
                note=", ".join(t.notes) or None,
                origin=p0.origin,
            ))
        databases.append(PatternDatabase(field, derivs, tuple(patterns)))
    return program.with_pass("merge_by_field", databases=tuple(databases),
                             fallbacks=tuple(sorted(fallbacks, key=lambda f: f.leaf)))
