"""Running the example pipelines of pipelines/ (YAML or SQL) against the test servers.

The examples template their addresses with env(): `server_env` gives the variables for the fixtures in
use, `run_example` validates the example with them (and `--var`s) and runs it once (AvailableNow) on the
shared Spark session, `produce_kafka` and `produce_rocketmq` write its input. Used by
tests/integration/test_examples_servers.py, test_sql_servers.py and the RocketMQ tests.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def server_env(kafka: Any = None, mariadb: Any = None, opensearch: Any = None, rocketmq: Any = None) -> dict[str, str]:
    env: dict[str, str] = {}
    if kafka is not None:
        env["KAFKA_BOOTSTRAP"] = kafka.bootstrap_servers
    if mariadb is not None:
        env.update(MYSQL_HOST=mariadb.host, MYSQL_PORT=str(mariadb.port), MYSQL_DATABASE=mariadb.database,
                   MYSQL_USER=mariadb.user, MYSQL_PASSWORD=mariadb.password)
    if opensearch is not None:  # a URL (YAML's hosts) and rsqldb's endPoint + port
        env.update(OPENSEARCH_URL=opensearch.url, ES_HOST="127.0.0.1", ES_PORT=str(opensearch.http_port))
    if rocketmq is not None:
        env["ROCKETMQ_NAMESRV"] = rocketmq.namesrv_addr
    return env


def run_example(spark: Any, name: str, env: dict[str, str], cli_vars: dict[str, str], checkpoint: Path) -> Any:
    """pipelines/<name> validated with `env` and `cli_vars`, run once; returns the finished PipelineRun."""
    from etl.check import check_file
    from etl.runtime.runner import PipelineRun, RunOptions

    checked = check_file(REPO / "pipelines" / name, cli_vars=cli_vars, environ=env, programs=True)
    assert checked.plan is not None, "\n".join(d.render() for d in checked.report.sorted())
    run = PipelineRun(checked.plan, spark, RunOptions(once=True, checkpoint=str(checkpoint), progress="none"))
    run.start()
    run.wait()
    return run


def produce_kafka(bootstrap: str, topic: str, values: list[str], keys: list[str] | None = None) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), key=keys[i].encode() if keys else None)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def produce_rocketmq(namesrv: str, topic: str, bodies: list[bytes], tags: list[str] | None = None,
                     keys: list[str] | None = None, wait: bool = True) -> None:
    """Sends `bodies` (keys k0, k1, ... unless given); then (`wait`) waits until a consumer sees them all."""
    from etl.connectors import rocketmq_client as rmq

    before = visible_rocketmq(namesrv, topic) if wait else 0
    p = rmq.shared_producer(namesrv, "etl-test-producer")
    for i, b in enumerate(bodies):
        p.send(topic, b, keys=keys[i] if keys else f"k{i}", tags=tags[i] if tags else None)
    if wait:
        wait_visible_rocketmq(namesrv, topic, before + len(bodies))


def visible_rocketmq(namesrv: str, topic: str) -> int:
    """Messages a consumer sees in `topic`: the sum of its queues' max offsets (0 without a route)."""
    from etl.connectors import rocketmq_client as rmq

    c = rmq.shared_consumer(namesrv, "etl-test-reader", ("etl_msg_id",))
    return sum(c.bounds(topic, q)[1] for q in rmq.topic_queues(namesrv, topic) or [])


def wait_visible_rocketmq(namesrv: str, topic: str, count: int, timeout: float = 30.0) -> None:
    """Waits until `topic` shows `count` messages to a consumer. The broker acknowledges a send once its
    commit log holds the message, and indexes it in its queue (the queue's max offset) afterwards, on a
    thread of its own: a test that reads right after writing would miss messages on a busy machine."""
    deadline = time.monotonic() + timeout
    while (seen := visible_rocketmq(namesrv, topic)) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}: {seen} of {count} messages visible after {timeout:.0f} s")
        time.sleep(0.05)
