"""own_workers: Python functions made inside run in a pool of Spark Python workers of their own."""

from __future__ import annotations

from etl.compile.workers import POOL_VAR, own_workers


def test_functions_made_inside_run_in_their_own_pool(spark):
    def where(batches):  # nested: pickled by value (the tests folder is not importable on workers)
        import os

        import pyarrow as pa

        for b in batches:
            n = b.num_rows
            yield pa.RecordBatch.from_arrays([pa.array([os.environ.get("ETL_WORKER_POOL", "")] * n),
                                              pa.array([os.getpid()] * n)], names=["pool", "pid"])

    df = spark.range(8, numPartitions=2)
    with own_workers(spark, "lookup:t"):
        inside = df.mapInArrow(where, "pool string, pid long")
    outside = df.mapInArrow(where, "pool string, pid long")
    assert POOL_VAR not in spark.sparkContext.environment
    for _ in range(2):  # the pools keep their workers: still apart the second time
        a, b = inside.collect(), outside.collect()
        assert {r.pool for r in a} == {"lookup:t"} and {r.pool for r in b} == {""}
        assert not {r.pid for r in a} & {r.pid for r in b}
