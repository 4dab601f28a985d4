"""Spark round trips through the connector jars in java/lib/spark. The suite calls check_kafka and check_jdbc
with its own session (tests/integration/test_servers_smoke.py); by hand, in a SparkSession of their own:

    python -m tests.servers.spark_smoke --kafka 127.0.0.1:9092 \
        --jdbc-url 'jdbc:mysql://127.0.0.1:3306/etl_test?permitMysqlScheme' \
        --jdbc-user root --jdbc-password pw --checkpoint /tmp/ckpt

Prints one ``OK <check>`` line per passed check; exits non-zero on failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

from ._base import java_lib_dir


def spark_connector_jars() -> list[str]:
    """The jars to put on ``spark.jars`` for the Kafka source/sink and MariaDB JDBC."""
    return sorted(str(p) for p in (java_lib_dir() / "spark").glob("*.jar"))


def _session():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    jars = spark_connector_jars()
    if not jars:
        raise SystemExit("java/lib/spark is empty: run scripts/setup-java.sh spark")
    return (
        SparkSession.builder.master("local[2]")
        .appName("servers-spark-smoke")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )


def check_kafka(spark, bootstrap: str, checkpoint: Path) -> None:
    topic = f"spark_{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame([(str(i), f"v{i}") for i in range(10)], ["key", "value"])
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()
    print("OK kafka batch write", flush=True)

    batch = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic).option("startingOffsets", "earliest").load()
    )
    values = sorted(r.value.decode() for r in batch.select("value").collect())
    assert values == sorted(f"v{i}" for i in range(10)), values
    print("OK kafka batch read", flush=True)

    stream = (
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic).option("startingOffsets", "earliest").load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
    )
    out_topic = topic + "_out"
    query = (
        stream.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("topic", out_topic).option("checkpointLocation", str(checkpoint / "k2k"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()
    copied = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", out_topic).option("startingOffsets", "earliest").load()
    )
    assert copied.count() == 10, copied.count()
    print("OK kafka streaming read + write (availableNow)", flush=True)


def check_jdbc(spark, url: str, user: str, password: str) -> None:
    options = {
        "url": url,
        "driver": "org.mariadb.jdbc.Driver",
        "user": user,
        "password": password,
        "dbtable": f"spark_jdbc_{uuid.uuid4().hex[:8]}",
    }
    df = spark.createDataFrame([(1, "a"), (2, "b")], ["id", "name"])
    df.write.format("jdbc").options(**options).mode("overwrite").save()
    back = sorted(tuple(r) for r in spark.read.format("jdbc").options(**options).load().collect())
    assert back == [(1, "a"), (2, "b")], back
    print("OK jdbc write + read (MariaDB)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kafka")
    parser.add_argument("--jdbc-url")
    parser.add_argument("--jdbc-user", default="root")
    parser.add_argument("--jdbc-password", default="")
    parser.add_argument("--checkpoint", type=Path, required=True)
    args = parser.parse_args(argv)
    spark = _session()
    try:
        spark.sparkContext.setLogLevel("WARN")
        if args.kafka:
            check_kafka(spark, args.kafka, args.checkpoint)
        if args.jdbc_url:
            check_jdbc(spark, args.jdbc_url, args.jdbc_user, args.jdbc_password)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
