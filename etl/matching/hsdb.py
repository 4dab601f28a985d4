"""Compile a Hyperscan database from its patterns (the driver's fallback pass, and an executor on another CPU)."""

from __future__ import annotations

import hyperscan

from etl.matching.ir import HsPattern


def compile_database(patterns: tuple[HsPattern, ...]) -> hyperscan.Database:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[p.expression for p in patterns],
        ids=[p.pattern_id for p in patterns],
        flags=[p.flags for p in patterns],
    )
    return db
