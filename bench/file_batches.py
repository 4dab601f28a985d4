#!/usr/bin/env python3
"""The file sink's fixed cost per micro-batch: many small batches through FileSink.write_batch (Spark's writer
into the staging folder, the driver's recovery check and publish), with py4j round trips counted.

    .venv/bin/python bench/file_batches.py [--batches 200] [--rows 10] [--repeat 3]

Each round writes --batches batches of --rows rows (2 partitions: 2 parts a batch) to a new folder, after one
unmeasured round. Per batch: wall milliseconds, CPU milliseconds (the JVM's and this process's) and py4j round
trips of the driver (counted on py4j's client: deterministic, unlike the times on a loaded machine).
Last line: `file_batches batches=N ms_per_batch=A cpu_ms_per_batch=B round_trips_per_batch=C load=..` (medians).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sinks import timed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from etl.components.sinks.file.build import FileSink
    from etl.runtime.session import build_session
    from etl.runtime.sink import SinkContext
    from etl.components.sinks.file.spec import FileSink as FileSinkSpec

    spark = build_session("bench-file-batches", "local[2]", {"spark.ui.enabled": "false"}, ui=False)
    client = spark.sparkContext._gateway._gateway_client
    calls = [0]
    send = client.send_command

    def counted(*a, **k):
        calls[0] += 1
        return send(*a, **k)

    client.send_command = counted
    frame = spark.createDataFrame(spark.sparkContext.parallelize([(i, f"name-{i}") for i in range(args.rows)], 2),
                                  "id bigint, name string").cache()
    frame.count()
    spec = FileSinkSpec(id="out", type="file", path="out", format="jsonl")
    with tempfile.TemporaryDirectory(prefix="etl-bench-batches-") as tmp:
        def one_round(name: str) -> tuple[float, float, float]:
            ctx = SinkContext("bench", "out", "q", f"{tmp}/{name}/ckpt", f"{tmp}/{name}")
            sink = FileSink(spec, ctx)
            before = calls[0]

            def run() -> None:
                for b in range(args.batches):
                    assert sink.write_batch(frame, b).rows == args.rows

            wall, cpu, _ = timed(spark, run)
            n = args.batches
            return wall * 1000 / n, cpu * 1000 / n, (calls[0] - before) / n

        one_round("warm")
        got = []
        loads = []
        for r in range(args.repeat):
            got.append(one_round(f"r{r}"))
            loads.append(Path("/proc/loadavg").read_text().split()[0])
            print(f"round {r}: {got[-1][0]:.1f} ms, {got[-1][1]:.1f} CPU-ms, {got[-1][2]:.1f} round trips a batch",
                  flush=True)
        ms, cpu, trips = (statistics.median(g[i] for g in got) for i in range(3))
        print(f"file_batches batches={args.batches} ms_per_batch={ms:.1f} cpu_ms_per_batch={cpu:.1f} "
              f"round_trips_per_batch={trips:.1f} load={'/'.join(loads)}")
    spark.stop()


if __name__ == "__main__":
    main()
