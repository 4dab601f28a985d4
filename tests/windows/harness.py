"""Run a window over fixed micro-batches on Spark and read the results back as plain rows."""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import Any

from etl.spec.base import EventTime
from tests.windows.batches_source import write_batches
from tests.windows.data import SCHEMA

FLOAT_FIELDS_TOL = 1e-6


def stream(spark: Any, batches: list[list[dict]], tmp: Path, schema: str = SCHEMA, name: str = "in") -> Any:
    path = tmp / f"{name}.json"
    write_batches(path, batches)
    return spark.readStream.format("etl_test_batches").option("path", str(path)).option("schema", schema).load()


def run_to_end(spark: Any, df: Any, tmp: Path) -> list[dict]:
    """Run `df` into a memory sink until every batch (and the watermark's no-data batch) is done; return rows."""
    table = "t_" + uuid.uuid4().hex[:10]
    q = (df.writeStream.format("memory").queryName(table).outputMode("append")
         .option("checkpointLocation", str(tmp / ("ck_" + table))).trigger(processingTime="0 seconds").start())
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    if q.exception() is not None:
        raise q.exception()
    return rows_of(spark.table(table))


def rows_of(df: Any) -> list[dict]:
    from pyspark.sql import functions as F

    cols = []
    for name, t in df.dtypes:
        cols.append(F.unix_millis(F.col(name)).alias(name) if t == "timestamp" else F.col(name))
    return [r.asDict(recursive=True) for r in df.select(*cols).collect()]


def et(watermark_s: float) -> EventTime:
    return EventTime(field="ts", watermark=watermark_s)


def _norm(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def canon(rows: list[dict], drop: tuple[str, ...] = ()) -> list[tuple]:
    out = []
    for r in rows:
        out.append(tuple(sorted((k, json.dumps(_norm(v), sort_keys=True)) for k, v in r.items() if k not in drop)))
    return sorted(out)


def assert_rows_equal(got: list[dict], want: list[dict], approx: tuple[str, ...] = (), rel: float = 0.05) -> None:
    """Exact comparison of row multisets; `approx` columns are compared within `rel` (HyperLogLog)."""
    cg, cw = canon(got, approx), canon(want, approx)
    if cg != cw:
        missing = [r for r in cw if r not in cg]
        extra = [r for r in cg if r not in cw]
        raise AssertionError(f"{len(got)} rows vs {len(want)} expected\nmissing: {missing[:5]}\nextra: {extra[:5]}")
    if approx:
        key = lambda r: canon([r], approx)[0]  # noqa: E731
        by_key = {}
        for r in want:
            by_key.setdefault(key(r), []).append(r)
        for r in got:
            w = by_key[key(r)].pop()
            for a in approx:
                assert math.isclose(r[a], w[a], rel_tol=rel, abs_tol=1), (a, r[a], w[a])
