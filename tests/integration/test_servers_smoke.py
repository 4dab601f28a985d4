"""Smoke tests for the real test servers (tests/servers): one round trip each,
a stop/start on the same data, and the Spark connector jars in java/lib/spark.

Prerequisites: scripts/setup-java.sh && scripts/setup-servers.sh
Run: .venv/bin/python -m pytest -m servers tests/integration/test_servers_smoke.py -s
(-s shows the start-up times.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `tests.servers` importable under plain `pytest` too
    sys.path.insert(0, str(REPO))

from tests.servers import KafkaServer, MariaDBServer, RocketMQServer  # noqa: E402
from tests.servers import spark_smoke  # noqa: E402
from tests.servers._base import java_binary, java_lib_dir, port_open  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.timeout(600)]


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# -- Kafka -------------------------------------------------------------------


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i, value in enumerate(values):
        producer.produce(topic, key=str(i).encode(), value=value)
    assert producer.flush(30) == 0


def _consume(bootstrap: str, topic: str, count: int, timeout: float = 60.0) -> list[bytes]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": _name("smoke"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_kafka_produce_consume(kafka_server: KafkaServer) -> None:
    topic = _name("smoke")
    kafka_server.create_topic(topic, partitions=2)
    values = [f"message {i}".encode() for i in range(5)]
    _produce(kafka_server.bootstrap_servers, topic, values)
    assert sorted(_consume(kafka_server.bootstrap_servers, topic, len(values))) == sorted(values)


def test_kafka_keeps_messages_of_any_age(kafka_server: KafkaServer) -> None:
    """The tests' events carry fixed dates, months old by the broker's clock: no time-based retention deletes them
    (a run of the suite lost a topic's messages to the broker's 5-minute retention check)."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": kafka_server.bootstrap_servers})
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    config = admin.describe_configs([broker])[broker].result(timeout=30)
    assert config["log.retention.ms"].value == "-1"


def test_kafka_auto_created_topic(kafka_server: KafkaServer) -> None:
    topic = _name("auto")
    _produce(kafka_server.bootstrap_servers, topic, [b"hello"])
    assert _consume(kafka_server.bootstrap_servers, topic, 1) == [b"hello"]


def test_kafka_stop_start_keeps_data(kafka_server: KafkaServer) -> None:
    topic = _name("restart")
    _produce(kafka_server.bootstrap_servers, topic, [b"before"])
    kafka_server.stop()
    assert not port_open(kafka_server.port)
    kafka_server.start()
    print(f"\n[servers] kafka restart took {kafka_server.startup_seconds:.1f}s")
    _produce(kafka_server.bootstrap_servers, topic, [b"after"])
    assert _consume(kafka_server.bootstrap_servers, topic, 2) == [b"before", b"after"]


def test_kafka_outage_producer_recovers(kafka_server: KafkaServer) -> None:
    """A producer that sends while the broker is down delivers after restart."""
    from confluent_kafka import Producer

    topic = _name("outage")
    kafka_server.create_topic(topic)
    producer = Producer(
        {"bootstrap.servers": kafka_server.bootstrap_servers, "enable.idempotence": True, "log_level": 2}
    )
    outage = kafka_server.outage(5)
    outage.wait_stopped()
    assert not port_open(kafka_server.port)
    producer.produce(topic, value=b"during outage")
    outage.join(120)
    assert producer.flush(60) == 0
    assert _consume(kafka_server.bootstrap_servers, topic, 1) == [b"during outage"]


# -- MariaDB -----------------------------------------------------------------


def test_mariadb_create_insert_select(mariadb_server: MariaDBServer) -> None:
    table = _name("smoke")
    conn = mariadb_server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(50), ts DATETIME(3))")
            cur.executemany(
                f"INSERT INTO {table} VALUES (%s, %s, %s)",
                [(1, "a", "2026-01-01 00:00:00.123"), (2, "ü", "2026-01-02 00:00:00")],
            )
        conn.commit()
        with conn.cursor() as cur:
            cur.execute(f"SELECT id, name FROM {table} ORDER BY id")
            assert cur.fetchall() == ((1, "a"), (2, "ü"))
            cur.execute("SELECT @@time_zone, @@character_set_server, DATABASE()")
            assert cur.fetchone() == ("+00:00", "utf8mb4", mariadb_server.database)
    finally:
        conn.close()


def test_mariadb_stop_start_keeps_data(mariadb_server: MariaDBServer) -> None:
    table = _name("restart")
    conn = mariadb_server.connect(autocommit=True)
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO {table} VALUES (42)")
    conn.close()
    with mariadb_server.down():
        assert not port_open(mariadb_server.port)
    print(f"\n[servers] mariadb restart took {mariadb_server.startup_seconds:.1f}s")
    conn = mariadb_server.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT id FROM {table}")
        assert cur.fetchall() == ((42,),)
    conn.close()


# -- OpenSearch --------------------------------------------------------------


def test_opensearch_index_search(opensearch_server) -> None:
    index = _name("smoke")
    opensearch_server.request(
        "PUT",
        f"/{index}",
        {"settings": {"number_of_shards": 1, "number_of_replicas": 0},
         "mappings": {"properties": {"msg": {"type": "text"}, "level": {"type": "keyword"}}}},
    )
    doc = {"msg": "disk full on host a", "level": "ERROR"}
    opensearch_server.request("PUT", f"/{index}/_doc/id-1?refresh=true", doc)
    bulk = "".join(
        f'{{"index":{{"_index":"{index}","_id":"id-{i}"}}}}\n{{"msg":"line {i}","level":"INFO"}}\n' for i in (2, 3)
    )
    result = opensearch_server.request("POST", "/_bulk?refresh=true", bulk)
    assert result["errors"] is False
    hits = opensearch_server.request("POST", f"/{index}/_search", {"query": {"match": {"msg": "disk"}}})["hits"]
    assert [h["_id"] for h in hits["hits"]] == ["id-1"]
    count = opensearch_server.request("GET", f"/{index}/_count?q=level:INFO")
    assert count["count"] == 2
    health = opensearch_server.request("GET", "/_cluster/health")
    assert health["status"] in ("green", "yellow")


# -- RocketMQ ----------------------------------------------------------------


def test_rocketmq_produce_pull(rocketmq_server: RocketMQServer, tmp_path: Path) -> None:
    from rocketmq.client import Message, Producer, PullConsumer

    topic = _name("SmokeTopic")
    producer = Producer(_name("PID"))
    producer.set_namesrv_addr(rocketmq_server.namesrv_addr)
    producer.start()
    try:
        sent = []
        for i in range(4):
            msg = Message(topic)
            msg.set_keys(f"k{i}")
            msg.set_tags("smoke")
            msg.set_body(f"body {i}".encode())
            result = producer.send_sync(msg)
            assert int(result.status) == 0, result  # SEND_OK
            sent.append(f"body {i}".encode())
    finally:
        producer.shutdown()

    consumer = PullConsumer(_name("CID"))
    consumer.set_namesrv_addr(rocketmq_server.namesrv_addr)
    consumer.start()
    try:
        got = []
        deadline = time.monotonic() + 30
        while len(got) < len(sent) and time.monotonic() < deadline:
            got.extend(m.body for m in consumer.pull(topic))
    finally:
        consumer.shutdown()
    assert sorted(got) == sorted(sent)


# -- Spark connector jars (java/lib/spark) -------------------------------------


def test_spark_connector_jars_link_against_pyspark() -> None:
    """Every class/method/field the connector jars use exists in pyspark's jars
    (the connector is 4.2.0, pyspark 4.3.0; see java/pom.xml)."""
    import pyspark

    pyspark_jars = Path(pyspark.__file__).parent / "jars"
    spark_lib = java_lib_dir() / "spark"
    checked = [str(spark_lib / n) for n in os.listdir(spark_lib) if n.startswith("spark-")]
    done = subprocess.run(
        [java_binary(), "-cp", f"{pyspark_jars}/*", str(REPO / "java" / "tools" / "LinkCheck.java"),
         f"{pyspark_jars}/*:{spark_lib}/*", *checked],
        capture_output=True, text=True, timeout=300,
    )
    problems = [line for line in done.stdout.splitlines() if line.startswith("missing")]
    # Known and harmless: log keys used only when fetching Kerberos delegation
    # tokens (token provider 4.0.0 on Spark 4.3).
    unexpected = [p for p in problems if "KafkaDelegationTokenProvider" not in p]
    assert not unexpected, done.stdout + done.stderr


@pytest.mark.spark
def test_spark_kafka_connector_and_jdbc(
    spark, kafka_server: KafkaServer, mariadb_server: MariaDBServer, tmp_path: Path
) -> None:
    """Kafka batch/stream read+write and MariaDB JDBC through java/lib/spark, in the test run's session (etl's
    session puts those jars on spark.jars: etl.runtime.session.connector_jars)."""
    spark_smoke.check_kafka(spark, kafka_server.bootstrap_servers, tmp_path)
    spark_smoke.check_jdbc(spark, mariadb_server.jdbc_url, mariadb_server.user, mariadb_server.password)
