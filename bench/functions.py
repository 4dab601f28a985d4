#!/usr/bin/env python3
"""A pipeline's scalar Python function against Spark's own: a derive over N rows, three ways, side by side.

    .venv/bin/python bench/functions.py [--rows 300000] [--repeat 3]

In one Spark session (local[2]), over the same generated rows (range -> a text column), writing to Spark's
`noop` sink (every row computed, nothing stored):

* builtin: `upper(s)` (the JVM, no Python);
* function: `shout(s)`, a Python function of the pipeline as etl registers it (etl.compile.functions: an Arrow
  UDF returning value and error, behind a SQL function), evaluated unguarded (a clean micro-batch);
* guarded: the same inside etl's guard (a retried batch, or a stage upstream of a window): every row through
  etl.jvm.Guarded.

Medians of --repeat runs after one warm-up. Last line:

    functions rows=N builtin_s=.. function_s=.. guarded_s=.. rows_per_s_function=..
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODULE = "def shout(s: str) -> str:\n    return s.upper() + '!'\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from etl.compile import CompileContext, Compiler
    from etl.compile.guard import Guards, guarding
    from etl.diagnostics import Report
    from etl.graph import build_graph
    from etl.graph.checks import check_graph
    from etl.runtime.session import build_session
    from etl.spec.pipeline import Pipeline

    tmp = Path(tempfile.mkdtemp())
    (tmp / "udfs.py").write_text(MODULE)
    spec = Pipeline.model_validate({
        "name": "bench", "functions": [{"name": "shout", "callable": "udfs:shout"}],
        "sources": [{"id": "src", "type": "file", "path": str(tmp / "in"), "schema": {"s": "string"}}],
        "transforms": [{"id": "d", "type": "derive", "inputs": ["src"], "columns": {"t": "shout(s)"}}],
        "sinks": [{"id": "out", "type": "print", "inputs": ["d"]}]})
    report = Report()
    graph = check_graph(build_graph(spec, None, report, str(tmp)), report)
    assert not report.errors, report.errors
    spark = build_session("bench-functions", "local[2]", {"spark.ui.enabled": "false"}, ui=False)
    Compiler(CompileContext(spark, graph, str(tmp / "ck")))  # registers the function on the session
    df = spark.range(args.rows).select(F.concat(F.lit("row-"), F.col("id").cast("string")).alias("s")).cache()
    df.count()
    node = graph.node("d")

    def guarded():
        with guarding(True):
            g = Guards(CompileContext(spark, graph), node, df)
            frame, value = g.wrap(df, F.expr("shout(s)"), ("columns", "t"), "column 't'")
            return frame.withColumn("t", value)

    runs = {"builtin": lambda: df.withColumn("t", F.expr("upper(s)")),
            "function": lambda: df.withColumn("t", F.expr("shout(s)")), "guarded": guarded}
    out = {}
    for name, make in runs.items():
        times = []
        for i in range(args.repeat + 1):
            t = time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            if i:
                times.append(time.perf_counter() - t)
        out[name] = statistics.median(times)
        print(f"{name}: {out[name]:.2f} s", flush=True)
    spark.stop()
    print(f"functions rows={args.rows} builtin_s={out['builtin']:.2f} function_s={out['function']:.2f} "
          f"guarded_s={out['guarded']:.2f} rows_per_s_function={args.rows / out['function']:,.0f}")


if __name__ == "__main__":
    main()
