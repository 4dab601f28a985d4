#!/usr/bin/env python3
"""grok matching alone, in the JVM: what etl/jvm/Grok.java costs per line, without sources, sinks or Python.

    .venv/bin/python bench/grok_match.py                  # 1,000,000 lines, local[1] (one core)
    .venv/bin/python bench/grok_match.py --lines 200000 --repeat 3

The access-log lines of bench/grok.py are read once and cached in the JVM's memory. Then each variant is a batch
projection over them, written to Spark's noop sink (every row evaluated, nothing stored; the variants take turns;
medians of --repeat runs after a warm-up of each):

  read     octet_length(line): reading the cached lines, the floor under the others (O(1) per line: length()
           would count the characters, about 0.35 s of 2 cores per 1M lines, and hide as much matching);
  program  size(captures) with %{COMBINEDAPACHELOG}'s matcher program (etl/grokvm), as `etl run` runs it;
  regex    the same with java.util.regex on every line (ETL_GROK_PROGRAM=off);
  dissect  size(values) of etl/jvm/Dissect.java on the same layout (bench/grok.py's DISSECT_PATTERN), as the dissect
           transform scans it.

Every line must match (checked once, before the runs). Figures: the run's seconds, then nanoseconds per line and MB/s
per core of the variant minus `read`. The last line is machine-readable:

    grok_match lines=N program_ns_per_line=A regex_ns_per_line=B dissect_ns_per_line=D program_mb_s_per_core=C
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from grok import DISSECT_PATTERN, make_data  # noqa: E402  (bench/grok.py: the same generated lines, cached on disk)


def task_slots(master: str) -> int:
    """Task threads of a local master (local, local[N], local[*]); 1 otherwise."""
    import os
    import re

    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master)
    if not m:
        return 1
    return os.cpu_count() or 1 if m.group(1) == "*" else int(m.group(1) or 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--master", default="local[1]")
    ap.add_argument("--data", default=str(ROOT / "bench" / "data" / "access"), help="cached input folder")
    args = ap.parse_args()

    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    from etl.compile import jvm
    from etl.components.transforms.grok import build as gk
    from etl.grok import expand
    from etl.runtime.session import build_session

    size = make_data(Path(args.data), args.lines)
    spark = build_session("etl-bench-grok-match", args.master, {"spark.ui.enabled": "false"}, ui=False)
    try:
        if not jvm.available(spark):
            raise SystemExit(f"etl's jar is not available: {jvm.unavailable_reason()}")
        cores = task_slots(spark.sparkContext.master)
        lines = spark.read.text(args.data).withColumnRenamed("value", "line").cache()
        if lines.count() != args.lines:
            raise SystemExit(f"{args.data}: expected {args.lines} lines")
        g = expand("%{COMBINEDAPACHELOG}")

        def captures(program: bool):
            spec = bytearray(gk.spec_bytes(g, program=program))
            return jvm.static_call(spark, "etl.jvm.Grok", "captures", ArrayType(StringType()), F.col("line"),
                                   F.lit(spec))

        from etl.dissect import parse, spec_bytes

        d = parse(DISSECT_PATTERN)

        def dissect():
            return jvm.static_call(spark, "etl.jvm.Dissect", "values", ArrayType(StringType()), F.col("line"),
                                   F.lit(bytearray(spec_bytes(d))))

        columns = {"read": lambda: F.octet_length("line"), "program": lambda: F.size(captures(True)),
                   "regex": lambda: F.size(captures(False)), "dissect": lambda: F.size(dissect())}
        for v in ("program", "regex", "dissect"):  # every line matches (and JIT and codegen warm up)
            want = (len(d.fields) if v == "dissect" else len(g.fields)) * args.lines
            got = lines.select(F.sum(columns[v]())).collect()[0][0]
            if got != want:
                raise SystemExit(f"{v}: {got} captures, expected {want} (a line did not match)")
        times: dict[str, list[float]] = {v: [] for v in columns}
        for r in range(args.repeat + 1):
            for v, column in columns.items():
                # a new frame each time (a frame run again would reuse its shuffle); the noop sink evaluates every
                # row and stores nothing
                frame = lines.select(column().alias("x"))
                t0 = time.perf_counter()
                frame.write.format("noop").mode("overwrite").save()
                seconds = time.perf_counter() - t0
                if r:  # round 0 warms up
                    times[v].append(seconds)
                    print(f"run {r} {v:<8} {seconds:6.3f} s", flush=True)
    finally:
        spark.stop()
    med = {v: statistics.median(t) for v, t in times.items()}
    net = {v: max(med[v] - med["read"], 1e-9) for v in ("program", "regex", "dissect")}
    ns = {v: net[v] * cores / args.lines * 1e9 for v in net}
    mb_core = size / 1e6 / (net["program"] * cores)
    print(f"cores={cores} read={med['read']:.3f} s program={med['program']:.3f} s regex={med['regex']:.3f} s; "
          f"net of read, per line and core: program {ns['program']:.0f} ns, regex {ns['regex']:.0f} ns "
          f"(program/regex {ns['regex'] / ns['program']:.2f}x)")
    print(f"dissect={med['dissect']:.3f} s: net of read, per line and core {ns['dissect']:.0f} ns, "
          f"grok program/dissect {ns['program'] / ns['dissect']:.2f}x")
    print(f"grok_match lines={args.lines} program_ns_per_line={ns['program']:.0f} regex_ns_per_line={ns['regex']:.0f} "
          f"dissect_ns_per_line={ns['dissect']:.0f} program_mb_s_per_core={mb_core:.1f}")


if __name__ == "__main__":
    main()
