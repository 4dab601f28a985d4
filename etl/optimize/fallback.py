"""Pass 4: compile each Hyperscan database; patterns Hyperscan rejects fall back.

Each database is compiled once with all its expressions. When that fails,
every expression is test-compiled alone (cached) to find the ones Hyperscan
rejects (backreferences and lookaround never get here: the translation already
replaced them by a superset; what is left is e.g. an anchor in the middle of a
pattern or a repeat too large). A rejected pattern is retried in relaxed form
(anchors dropped, repeats capped: a superset whose reports Python ``re``
confirms); when even that is rejected it runs in Python ``re`` alone and is
listed in ``fallbacks`` with the reason and the rules that use it.

Chimera is not used: it has PCRE semantics, not Python's, and would need the
same confirmation.

The surviving databases are serialized with ``hyperscan.dumpb`` here, once, on
the driver; the matcher loads them per process. Large databases are kept in the
on-disk cache (:mod:`etl.diskcache`), so a restart does not recompile.
"""

from __future__ import annotations

from dataclasses import replace

import hyperscan

from etl import diskcache
from etl.matching.hsdb import compile_database
from etl.matching.ir import FallbackPattern, FilterProgram, HsPattern, PatternDatabase, RuleCompileError
from etl.regexes.hsbound import DATABASE_BUDGET_S, BudgetExceeded, bounded
from etl.regexes.hsregex import known_rejected, test_compile, translate


def serialized_database(patterns: tuple[HsPattern, ...]) -> bytes:
    """``hyperscan.dumpb`` of the compiled patterns; large databases come from the disk cache when they can."""
    key = None
    if len(patterns) >= diskcache.MIN_PATTERNS:
        key = diskcache.database_key([p.expression for p in patterns], [p.pattern_id for p in patterns],
                                     [p.flags for p in patterns])
        cached = diskcache.load_database(key)
        if cached is not None:
            return cached
    blob = bounded(lambda: hyperscan.dumpb(compile_database(patterns)), seconds=DATABASE_BUDGET_S)
    if key is not None:
        diskcache.store_database(key, blob)
    return blob


def _sift(program: FilterProgram, db: PatternDatabase, fallbacks: list[FallbackPattern]) -> tuple[HsPattern, ...]:
    """Keep what Hyperscan accepts (relaxing where needed); move the rest to ``fallbacks``."""
    kept: list[HsPattern] = []
    for p in db.patterns:
        err = test_compile(p.expression.decode("utf-8"), p.flags)
        if err is None:
            kept.append(p)
            continue
        relaxed = translate(p.python_regex, p.python_flags, relax=True)
        if relaxed.expression is not None and test_compile(relaxed.expression, relaxed.flags) is None:
            kept.append(replace(
                p, expression=relaxed.expression.encode("utf-8"), flags=relaxed.flags,
                ascii_rows="confirm", other_rows="confirm",
                note=f"Hyperscan rejects the exact form ({err})"))
            continue
        for leaf in p.leaves:
            fallbacks.append(FallbackPattern(
                leaf, db.field, db.derivations, p.python_regex, p.python_flags,
                f"Hyperscan rejects it ({err})", program.predicates[leaf].rules, p.origin))
    return tuple(replace(p, pattern_id=i) for i, p in enumerate(kept))


def fallback(program: FilterProgram) -> FilterProgram:
    fallbacks = list(program.fallbacks)
    databases = []
    for db in program.databases:
        try:
            if any(known_rejected(p.expression.decode("utf-8"), p.flags) for p in db.patterns):
                raise BudgetExceeded(0)  # sift it at once rather than compile what will fail again
            serialized = serialized_database(db.patterns)
        except (hyperscan.error, BudgetExceeded):
            patterns = _sift(program, db, fallbacks)
            if not patterns:
                continue
            try:
                serialized = serialized_database(patterns)
            except hyperscan.error as e:
                origin = patterns[0].origin
                raise RuleCompileError(f"Hyperscan cannot compile the patterns on {db.subject}: {e}", origin) from e
            except BudgetExceeded as e:  # every pattern compiles alone, not all together in time: Python re
                for p in patterns:
                    for leaf in p.leaves:
                        fallbacks.append(FallbackPattern(
                            leaf, db.field, db.derivations, p.python_regex, p.python_flags,
                            f"Hyperscan: {e} for the database of {db.subject}", program.predicates[leaf].rules,
                            p.origin))
                continue
            db = replace(db, patterns=patterns)
        databases.append(replace(db, serialized=serialized))
    return program.with_pass("fallback", databases=tuple(databases),
                             fallbacks=tuple(sorted(fallbacks, key=lambda f: f.leaf)))
