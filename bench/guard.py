#!/usr/bin/env python3
"""The dead-letter guard's cost on clean data: a derive over 1M rows, unguarded vs guarded, side by side.

    .venv/bin/python bench/guard.py [--rows 1000000] [--repeat 5] [--data /tmp/etl-bench-guard]

Generates a parquet file of clean rows (id, a: digits as text, b: a decimal as text, ts: a timestamp as text,
c: an int), then, in one Spark session (local[2], etl's jar), times each of these over the same file, writing
to Spark's `noop` sink (every row computed, nothing stored):

* scan: the columns read, nothing derived (the floor);
* unguarded: the derive's five expressions (casts, arithmetic, to_timestamp) as plain Spark columns, as etl
  compiled a derive before the guard: a bad row would stop the query;
* etl: etl's compile path for a clean micro-batch (etl.compile.columns.build_derive outside
  `guarding()`): optimistic, unguarded; a batch that fails on a row is evaluated again with guards;
* guarded: the same inside `guarding()` (a retried batch, and every stage in the streaming plan upstream of a
  window, join or lookup): every expression in etl.jvm.Guarded, the frame with the dead-letter columns as a
  splitting sink writes it (one pass);
* guarded_out: the good rows only (`where reason is null`), as a sink that does not split reads them;
* bad_row: the file with one bad row (row 500,000: a = 'x'), as the runner evaluates it: the unguarded attempt
  fails, then the guarded pass writes the good rows and the dead letter.

Medians of --repeat runs (after one warm-up of each). Last lines:

    guard cpu rows=N scan_s=.. unguarded_s=.. etl_s=.. guarded_s=.. guarded_out_s=.. bad_row_s=..
    guard cpu ratio etl/unguarded=X guarded/unguarded=Y ...

(wall seconds, then JVM CPU seconds: on a busy machine the CPU figures are the steadier ones).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COLUMNS = {
    "n": "cast(a as int)",
    "price": "cast(b as double) * 1.5",
    "t": "to_timestamp(ts)",
    "ratio": "c div (c % 7 + 1)",
    "total": "cast(a as bigint) * c + 1",
}
PIPELINE = """\
    name: bench-guard
    sources:
      - {{id: src, type: file, path: {data}, format: parquet,
          schema: {{id: bigint, a: string, b: string, ts: string, c: int}}}}
    transforms:
      - id: d
        type: derive
        input: src
        columns:
    {columns}
    sinks:
      - {{id: out, type: file, input: d, path: out, format: parquet}}
"""


def make_data(spark, path: Path, rows: int) -> None:
    from pyspark.sql import functions as F

    if (path / "_SUCCESS").exists() and spark.read.parquet(str(path)).count() == rows:
        return
    df = spark.range(rows).select(
        F.col("id"),
        (F.col("id") % 100000).cast("string").alias("a"),
        F.format_string("%d.%02d", F.col("id") % 997, F.col("id") % 100).alias("b"),
        F.date_format(F.timestamp_seconds(F.lit(1767225600) + F.col("id")), "yyyy-MM-dd HH:mm:ss").alias("ts"),
        (F.col("id") % 1000).cast("int").alias("c"))
    df.write.mode("overwrite").parquet(str(path))


def jvm_cpu(pid: int) -> float:
    """CPU seconds the JVM has used (all its threads: tasks, JIT, GC)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(frame, pid: int) -> tuple[float, float]:
    """(wall seconds, JVM CPU seconds) of computing every row of `frame`."""
    c0, t0 = jvm_cpu(pid), time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0, jvm_cpu(pid) - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "etl-bench-guard"))
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from etl.check import check_file
    from etl.compile import jvm
    from etl.compile.context import CompileContext
    from etl.compile.deadletter import ok_frame
    from etl.compile.guard import guarding, row_error
    from etl.components.transforms.derive.build import build_derive
    from etl.runtime.session import build_session

    spark = build_session("etl-bench-guard", args.master, {"spark.ui.enabled": "false"}, ui=False)
    try:
        if not jvm.available(spark):
            raise SystemExit(f"etl's jar is not available: {jvm.unavailable_reason()}")
        data = Path(args.data)
        make_data(spark, data, args.rows)
        with tempfile.TemporaryDirectory(prefix="etl-bench-guard-") as tmp:
            yaml = Path(tmp) / "p.yaml"
            cols = "\n".join(f"          {k}: {v!r}" for k, v in COLUMNS.items())
            yaml.write_text(textwrap.dedent(PIPELINE).format(data=data, columns=textwrap.indent(cols, "")))
            c = check_file(yaml)
            assert c.graph is not None, [d.render() for d in c.report.sorted()]
            ctx = CompileContext(spark, c.graph)
            node = c.graph.node("d")
            src = spark.read.parquet(str(data))
            pid = spark.sparkContext._gateway.proc.pid

            def unguarded():
                df = src
                for name, sql in COLUMNS.items():
                    df = df.withColumn(name, F.expr(sql))
                return df

            def guarded(frame=src):
                with guarding():
                    return build_derive(ctx, node, [frame]).shared

            bad = src.withColumn("a", F.when(F.col("id") == args.rows // 2, F.lit("x")).otherwise(F.col("a")))

            def bad_row():
                try:
                    timed(build_derive(ctx, node, [bad]).out, pid)
                except Exception as e:  # noqa: BLE001 - the row error the runner retries on
                    assert row_error(e), e
                else:
                    raise AssertionError("the bad row did not fail the unguarded pass")
                return guarded(bad)

            cases = {"scan": lambda: src, "unguarded": unguarded, "etl": lambda: build_derive(ctx, node, [src]).out,
                     "guarded": guarded, "guarded_out": lambda: ok_frame(guarded()), "bad_row": bad_row}
            wall: dict[str, list[float]] = {k: [] for k in cases}
            cpu: dict[str, list[float]] = {k: [] for k in cases}
            for f in cases.values():  # warm-up: code generation, JIT, the file cache
                timed(f(), pid)
                timed(f(), pid)
            for _ in range(args.repeat):
                for k, f in cases.items():
                    c0, t0 = jvm_cpu(pid), time.perf_counter()
                    timed(f(), pid)
                    wall[k].append(time.perf_counter() - t0)
                    cpu[k].append(jvm_cpu(pid) - c0)
        for what, got in (("wall", wall), ("cpu", cpu)):
            med = {k: statistics.median(v) for k, v in got.items()}
            for k, v in got.items():
                print(f"  {what} {k:12s} " + " ".join(f"{x:.3f}" for x in v))
            print(f"guard {what} rows={args.rows} " + " ".join(f"{k}_s={v:.3f}" for k, v in med.items()))
            over = (med["guarded"] - med["scan"]) / max(med["unguarded"] - med["scan"], 1e-9)
            print(f"guard {what} ratio " + " ".join(f"{k}/unguarded={med[k] / med['unguarded']:.3f}" for k in
                                                    ("etl", "guarded", "guarded_out", "bad_row"))
                  + f" (guarded, the derive alone over the scan: {over:.2f}x)")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
