"""A windowed + joined streaming app for the restart test: run it, SIGKILL it, run it again.

python -m tests.windows.restart_driver WORKDIR [--trigger-ms N]

WORKDIR holds the inputs (windows.json, left.json, right.json, written by the test)
and receives checkpoints (ck/<query>) and outputs (out/<query>, Spark's exactly-once
file sink). Queries: `windows` (tumbling, sliding and session windows on the native
engine and on the state engine with late events to dead letters, side by side)
and `join` (left outer stream-stream join). The process exits 0
once every query has processed every input batch.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def build(spark, work: Path):
    from pyspark.sql import functions as F

    from etl.compile.joining import stream_join
    from etl.compile.windows.aggregate import window_aggregate
    from etl.spec.base import EventTime
    from etl.components.transforms.join.spec import JoinTransform
    from tests.windows.data import SCHEMA
    from tests.windows.join_data import DELAY_S as JOIN_DELAY, LEFT_SCHEMA, RIGHT_SCHEMA, WITHIN_S
    from tests.windows.test_window_oracle import DELAY_S, KINDS, make_spec

    def read(name: str, schema: str):
        return (spark.readStream.format("etl_test_batches").option("path", str(work / f"{name}.json"))
                .option("schema", schema).load())

    def epoch_ms(df):
        return df.select(*[F.unix_millis(F.col(n)).alias(n) if t == "timestamp" else F.col(f"`{n}`")
                           for n, t in df.dtypes])

    def union(frames):
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f, allowMissingColumns=True)
        return out

    src = read("windows", SCHEMA)
    et = EventTime(field="ts", watermark=DELAY_S)
    native = [window_aggregate(src, make_spec(k), et).df.withColumn("_variant", F.lit(k)) for k in KINDS]
    state = [window_aggregate(src, make_spec(k, emit={"late": "dead_letter"}), et).shared
             .withColumn("_variant", F.lit("state-" + k)) for k in KINDS]
    jet = EventTime(field="ts", watermark=JOIN_DELAY)
    join_spec = JoinTransform.model_validate({"id": "j", "type": "join", "inputs": ["l", "r"], "on": ["k"],
                                              "how": "left", "within": f"{WITHIN_S}s"})
    join = stream_join(read("left", LEFT_SCHEMA), read("right", RIGHT_SCHEMA), join_spec, jet, jet).df
    return {"windows": epoch_ms(union(native + state)), "join": epoch_ms(join)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--trigger-ms", type=int, default=300)
    args = ap.parse_args(argv)
    work = Path(args.work)

    from etl.runtime.session import build_session
    from tests.windows.batches_source import register

    # FAIR: the queries share the two cores (FIFO lets the first query's jobs starve the others)
    spark = build_session("etl-restart-test", "local[2]", {"spark.sql.shuffle.partitions": "2",
                                                           "spark.scheduler.mode": "FAIR"}, ui=False)
    register(spark)
    queries = {}
    for name, df in build(spark, work).items():
        queries[name] = q = (df.writeStream.format("json").queryName(name).outputMode("append")
                             .option("checkpointLocation", str(work / "ck" / name))
                             .option("path", str(work / "out" / name))
                             .trigger(processingTime=f"{args.trigger_ms} milliseconds").start())
        # the next query starts once this one finished a batch: when both started at once, the first job of a
        # restarted app failed now and then while its task was deserialized (java.io.OptionalDataException in
        # HashMap.readObject: a map the task holds changed while it was serialized; seen on 7371be7 too)
        while q.isActive and q.lastProgress is None:
            time.sleep(0.05)
    for name, q in queries.items():
        # the source offers one more batch per trigger until its file is exhausted: processAllAvailable
        # returns once every batch (and the watermark's no-data batch) is committed
        q.processAllAvailable()
        if q.exception() is not None:
            print(f"{name} failed: {q.exception()}", file=sys.stderr)
            return 1
    for q in queries.values():
        q.stop()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
