#!/usr/bin/env python3
"""The plain-PySpark side of bench/kafka.py: Kafka -> the same 41 rules as Spark column expressions -> Kafka.

    python bench/_plain_kafka.py BOOTSTRAP SRC DST CHECKPOINT RULES_JSON (default|realtime)

Spark's own Kafka source and sink, `local[*]`, the connector jars of java/lib/spark; `default` leaves Spark's default
trigger (a micro-batch as soon as the last one ends), `realtime` is `trigger(realTime="5 seconds")` (output mode
update). Each rule is the Column its etl rule means: regex -> rlike (java.util.regex find), contains caseless ->
lower(x).contains(lower(word)), starts_with, in, eq, all, not; a NULL verdict drops the row, as etl's keep does.
Runs until killed.
"""

from __future__ import annotations

import functools
import json
import operator
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def condition(rule: dict) -> Any:
    from pyspark.sql import functions as F

    if "all" in rule:
        return functools.reduce(operator.and_, [condition(r) for r in rule["all"]])
    if "any" in rule:
        return functools.reduce(operator.or_, [condition(r) for r in rule["any"]])
    if "not" in rule:
        return ~condition(rule["not"])
    col = F.col(rule["field"])
    if "regex" in rule:
        return col.rlike(rule["regex"])
    if "contains" in rule:
        return F.lower(col).contains(rule["contains"].lower()) if rule.get("caseless") else col.contains(rule["contains"])
    if "starts_with" in rule:
        return col.startswith(rule["starts_with"])
    if "in" in rule:
        return col.isin(rule["in"])
    if "eq" in rule:
        return col == F.lit(rule["eq"])
    raise ValueError(f"no plain form for {rule}")


def main() -> None:
    bootstrap, src, dst, checkpoint, rules_file, mode = sys.argv[1:7]
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    jars = ",".join(str(p) for p in sorted((REPO / "java" / "lib" / "spark").glob("*.jar")))
    spark = (SparkSession.builder.master("local[*]").appName("plain-kafka").config("spark.jars", jars)
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rules = json.loads(Path(rules_file).read_text())
    schema = "id bigint, sent_ms bigint, host string, user string, cmd string"
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", src)
           .option("startingOffsets", "earliest").option("kafka.isolation.level", "read_committed").load())
    rows = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("e")).select("e.*")
    kept = rows.where(functools.reduce(operator.or_, [condition(r["when"]) for r in rules]))
    out = kept.select(F.col("id").cast("string").alias("key"),
                      F.to_json(F.struct(*[F.col(c) for c in rows.columns])).alias("value"))
    w = (out.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
         .option("checkpointLocation", checkpoint))
    if mode == "realtime":
        w = w.outputMode("update").trigger(realTime="5 seconds")
    w.start().awaitTermination()


if __name__ == "__main__":
    main()
