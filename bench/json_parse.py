#!/usr/bin/env python3
"""JSON message values -> declared columns with dead-letter reasons: the physical plan's two `parser` engines side
by side (etl/jvm/JsonParse.java against Spark's from_json with a corrupt-record column).

    .venv/bin/python bench/json_parse.py [--events 1000000] [--repeat 5] [--bad 0.01]

--events Kafka-like values (binary, 9 fields of 5 types; a fraction --bad malformed or of the wrong type) are
written once to a parquet file; each round reads it and decodes it as the kafka source does
(etl.components.sources.kafka.build.decode: the columns, ERR and PAYLOAD), written to Spark's `noop` sink, one engine
then the other (alternating which goes first), after one unmeasured round of each. Timed: the query; measured:
wall seconds and CPU seconds of the JVM and this process (one local[2] session).
Last line: `json_parse events=N jvm_s=A from_json_s=B ratio=B/A jvm_cpu_s=C from_json_cpu_s=D cpu_ratio=D/C load=..`
(medians; ratio >= 1: the JVM parser is faster).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from sinks import alternating, ratio_line  # noqa: E402

SCHEMA = {"ts": "timestamp", "user": "string", "host": "string", "cmd": "string", "pid": "int", "bytes": "bigint",
          "ok": "boolean", "score": "double", "tags": "array<string>"}


def values(spark, n: int, bad: float, path: str) -> None:
    from pyspark.sql import functions as F

    every = max(1, int(round(1 / bad))) if bad > 0 else 0
    row = F.to_json(F.struct(
        F.timestamp_seconds(F.lit(1_767_000_000) + F.col("id")).alias("ts"),
        F.concat(F.lit("user-"), (F.col("id") % 97).cast("string")).alias("user"),
        F.concat(F.lit("web-"), (F.col("id") % 7).cast("string")).alias("host"),
        F.concat(F.lit("ls -la /var/log/app-"), (F.col("id") % 1000).cast("string")).alias("cmd"),
        (F.col("id") % 65536).cast("int").alias("pid"), (F.col("id") * 17).alias("bytes"),
        (F.col("id") % 2 == 0).alias("ok"), (F.col("id") / 3.0).alias("score"),
        F.array(F.lit("a"), F.lit("b")).alias("tags")))
    if every:
        broken = F.when(F.col("id") % (2 * every) == 0, F.lit('{"ts": "x", "pid": "not a number"}')) \
                  .otherwise(F.lit('{"user": "u", broken'))
        row = F.when(F.col("id") % every == 0, broken).otherwise(row)
    spark.range(n).select(row.cast("binary").alias("value")).repartition(2).write.mode("overwrite").parquet(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bad", type=float, default=0.01)
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from etl.components.sources.kafka import build as kafka
    from etl.runtime.session import build_session
    from etl.components.sources.kafka.spec import KafkaSource

    spark = build_session("bench-json-parse", "local[2]", {"spark.sql.shuffle.partitions": "2",
                                                           "spark.ui.enabled": "false"}, ui=False)
    spec = KafkaSource.model_validate({"id": "k", "type": "kafka", "bootstrap_servers": "127.0.0.1:1",
                                       "topics": ["t"], "format": "json", "schema": SCHEMA})
    node = SimpleNamespace(id="k", spec=spec, span="bench")
    with tempfile.TemporaryDirectory(prefix="etl-bench-json-") as tmp:
        path = f"{tmp}/values"
        values(spark, args.events, args.bad, path)
        def run(engine: str) -> None:
            kafka.decode(spark.read.parquet(path), spec, node, "p", engine).write.format("noop").mode("overwrite").save()

        runs = {"jvm": lambda: run("json-parse-jvm"), "from_json": lambda: run("from_json")}
        med, loads = alternating(spark, runs, args.repeat)
        print(ratio_line("json_parse", med, loads, "jvm", "from_json", events=args.events))
    spark.stop()


if __name__ == "__main__":
    main()
