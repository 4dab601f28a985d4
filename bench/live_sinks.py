#!/usr/bin/env python3
"""Per-batch cost of a partition's sink, built anew every micro-batch (before issue 42) against kept on its worker
between batches (etl.runtime.partitions.LIVE), side by side in one run, outside Spark.

    .venv/bin/python bench/live_sinks.py [--batches 20] [--rows 100] [--rounds 3]

Each batch is what an executor does for one partition (etl.runtime.partitions.PartitionWriter): take the
partition's sink (`checkout`), ask whether the batch is committed, write its rows with `write_arrow` (one
transaction with its marker for Kafka exactly-once), give the sink back (`checkin`: kept, or closed when the class
is not `live`). "new" runs the same code with the sink class's `live` off: a new instance per batch, as every
batch did before. Sinks: kafka exactly_once and at_least_once against a broker started here on free loopback
ports (tests/servers); the file sink's write of a batch in Python (jsonl), for scale: the file sink
is not `live` (its partitions are written by Spark's writer, and its one instance on the driver lives as long as
its query), so both of its columns are the same way. The two ways take turns, --rounds times, each on its own topic /
folder; the first batch of a "kept" run builds its sink too (it is in the figures).
Last lines: `live_sinks <sink> new_ms=<median per batch> kept_ms=<median> new_p90_ms=.. kept_p90_ms=.. load=..`.

`--moves`: what a partition's move between Spark's two Python workers costs the Kafka exactly-once sink. Two
partitions written at once (threads), each batch's two tasks on workers A and B in a seeded random order, one
sink instance per (worker, partition) as the workers keep them; a kept sink given its partition back makes its
producer anew (init_transactions fences the other worker's) and reads the markers. Its ms per moved batch and
partition, with librdkafka's sparse connections (`options: {enable.sparse.connections: "true"}`) and without (the
sink's default) taking turns: `live_sinks moves sparse_ms=.. eager_ms=.. sparse_p90_ms=.. eager_p90_ms=..`.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def run(cls: type, spec, base: str, batches: int, rows: int, kept: bool) -> list[float]:
    import pyarrow as pa

    from etl import workercache
    from etl.runtime.partitions import checkin, checkout
    from etl.runtime.sink import SinkContext

    workercache.clear_all()
    cls = type(cls.__name__, (cls,), {"live": kept and cls.__name__ != "FileSink"})
    ctx = SinkContext("bench", "out", "q.p0", os.path.join(base, "ckpt"), base, partition=0,
                      run=uuid.uuid4().hex[:8])
    times = []
    for b in range(batches):
        keys = [f"k{b}-{i}" for i in range(rows)]
        table = pa.table({"key": keys, "value": [f'{{"id": "{k}", "n": {i}}}' for i, k in enumerate(keys)]})
        t0 = time.perf_counter()
        sink, key = checkout(cls, spec, ctx)
        ok = False
        try:
            if not sink.is_committed(b):
                sink.write_arrow(table.to_batches(), b, table.schema)
            ok = True
        finally:
            checkin(sink, key, ok)
        times.append(time.perf_counter() - t0)
    workercache.clear_all()
    return times


def run_spark(spark, cls: type, spec, base: str, batches: int, rows: int, kept: bool) -> list[float]:
    """The same through Spark: the driver's write_batch of a 2-partition frame per batch (every partition written
    on a Python worker, the driver's commit and marker), the sink class made here (pickled by value) with `live`."""
    from pyspark.sql import functions as F

    from etl.runtime.sink import SinkContext

    cls = type(cls.__name__, (cls,), {"live": kept and cls.__name__ != "FileSink"})
    sink = cls(spec, SinkContext("bench", "out", "q", os.path.join(base, "ckpt"), base, run=uuid.uuid4().hex[:8]))
    times = []
    for b in range(batches):
        frame = spark.range(b * rows, (b + 1) * rows, 1, 2).select("id", F.lit("x" * 40).alias("text"))
        t0 = time.perf_counter()
        sink.write_batch(frame, b)
        times.append(time.perf_counter() - t0)
    sink.close()
    return times


def run_moves(spec, base: str, batches: int, rows: int, seed: int) -> list[float]:
    """Seconds of each batch of a partition whose kept sink on its worker wrote it before, then the other worker."""
    import pyarrow as pa

    from etl.components.sinks.kafka.build import KafkaSink
    from etl.runtime.sink import SinkContext

    run_id = uuid.uuid4().hex[:8]
    sinks = {(w, p): KafkaSink(spec, SinkContext("bench", "out", f"q.p{p}", os.path.join(base, "ckpt"), base,
                                                 partition=p, run=run_id)) for w in "AB" for p in (0, 1)}
    last: dict[int, str] = {}  # partition -> the worker that wrote its last batch
    wrote: set[tuple[str, int]] = set()
    moved: list[float] = []
    rng = random.Random(seed)

    def task(worker: str, part: int, b: int) -> None:
        keys = [f"k{b}-{part}-{i}" for i in range(rows)]
        table = pa.table({"key": keys, "value": [f'{{"id": "{k}"}}' for k in keys]})
        sink = sinks[(worker, part)]
        t0 = time.perf_counter()
        if not sink.is_committed(b):
            sink.write_arrow(table.to_batches(), b, table.schema)
        if (worker, part) in wrote and last[part] != worker:
            moved.append(time.perf_counter() - t0)
        wrote.add((worker, part))
        last[part] = worker

    try:
        for b in range(batches):
            order = ["A", "B"]
            rng.shuffle(order)
            tasks = [threading.Thread(target=task, args=(order[p], p, b)) for p in (0, 1)]
            for t in tasks:
                t.start()
            for t in tasks:
                t.join()
    finally:
        for sink in sinks.values():
            sink.close()
    return moved


def moves(args, registry, server, tmp: str) -> None:
    results: dict[str, list[float]] = {"sparse": [], "eager": []}
    for r in range(args.rounds):
        for way in results:
            options = {"enable.sparse.connections": "true"} if way == "sparse" else {}
            spec = registry.lookup("sink", "kafka").spec.model_validate(
                {"id": "out", "inputs": ["x"], "type": "kafka", "options": options,
                 "bootstrap_servers": server.bootstrap_servers, "topic": f"moves-{uuid.uuid4().hex[:8]}"})
            results[way] += run_moves(spec, os.path.join(tmp, f"moves-{r}-{way}"), args.batches, args.rows, r)
    med = {w: statistics.median(t) * 1000 for w, t in results.items()}
    p90 = {w: statistics.quantiles(t, n=10)[-1] * 1000 for w, t in results.items()}
    print(f"live_sinks moves batches={len(results['sparse'])}/{len(results['eager'])} rows={args.rows} "
          f"sparse_ms={med['sparse']:.1f} eager_ms={med['eager']:.1f} sparse_p90_ms={p90['sparse']:.1f} "
          f"eager_p90_ms={p90['eager']:.1f} load={os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spark", action="store_true", help="through Spark's local[2]: the driver's write per batch")
    ap.add_argument("--moves", action="store_true", help="the Kafka sink's cost of a partition's move between "
                    "workers, with and without librdkafka's sparse connections")
    args = ap.parse_args()
    spark = None
    if args.spark:
        from etl.runtime.session import build_session

        spark = build_session("live-sinks", "local[2]", {"spark.ui.enabled": "false"}, ui=False)
        spark.range(0, 10, 1, 2).count()  # the JVM's warm-up, unmeasured

    from etl import registry
    from etl.components.sinks.file.build import FileSink
    from etl.components.sinks.kafka.build import KafkaSink
    from tests.servers import KafkaServer

    server = KafkaServer(heap="512m")
    server.start()
    if args.moves:
        try:
            with tempfile.TemporaryDirectory(prefix="etl-live-sinks-") as tmp:
                moves(args, registry, server, tmp)
        finally:
            server.stop()
        return
    results: dict[str, dict[str, list[float]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="etl-live-sinks-") as tmp:
            for r in range(args.rounds):
                for kept in (False, True):
                    way = "kept" if kept else "new"
                    for delivery in ("exactly_once", "at_least_once"):
                        spec = registry.lookup("sink", "kafka").spec.model_validate(
                            {"id": "out", "inputs": ["x"], "type": "kafka", "delivery": delivery,
                             "bootstrap_servers": server.bootstrap_servers, "topic": f"live-{uuid.uuid4().hex[:8]}"})
                        base = os.path.join(tmp, f"{delivery}-{r}-{way}")
                        times = (run_spark(spark, KafkaSink, spec, base, args.batches, args.rows, kept) if spark
                                 else run(KafkaSink, spec, base, args.batches, args.rows, kept))
                        results.setdefault(f"kafka-{delivery}", {}).setdefault(way, []).extend(times)
                    base = os.path.join(tmp, f"file-{r}-{way}")
                    spec = registry.lookup("sink", "file").spec.model_validate(
                        {"id": "out", "inputs": ["x"], "type": "file", "path": "out", "format": "jsonl"})
                    times = (run_spark(spark, FileSink, spec, base, args.batches, args.rows, kept) if spark
                             else run(FileSink, spec, base, args.batches, args.rows, kept))
                    results.setdefault("file", {}).setdefault(way, []).extend(times)
    finally:
        server.stop()
        if spark is not None:
            spark.stop()
    load = os.getloadavg()[0]
    for name, ways in results.items():
        med = {w: statistics.median(t) * 1000 for w, t in ways.items()}
        p90 = {w: statistics.quantiles(t, n=10)[-1] * 1000 for w, t in ways.items()}
        print(f"live_sinks{' spark' if spark else ''} {name} batches={len(ways['new'])} rows={args.rows} new_ms={med['new']:.1f} "
              f"kept_ms={med['kept']:.1f} new_p90_ms={p90['new']:.1f} kept_p90_ms={p90['kept']:.1f} load={load:.1f}")


if __name__ == "__main__":
    main()
