"""Single-node KRaft Kafka broker from java/lib/kafka (scripts/setup-java.sh kafka)."""

from __future__ import annotations

import base64
import re
import subprocess
import uuid
from pathlib import Path

from ._base import (
    ManagedProcess,
    Server,
    ServerStartError,
    _NotReady,
    extra_jvm_flags,
    free_port,
    java_binary,
    java_heap_flags,
    java_lib_dir,
    require_dir,
)

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

_STARTED = re.compile(r"Kafka Server started")


class KafkaServer(Server):
    """KRaft broker+controller on 127.0.0.1; ``bootstrap_servers`` for clients.

    Topics are auto-created with ``num_partitions`` partitions; internal
    topics have replication factor 1 and a single partition (fast first
    consumer-group use). Data survives stop()/start().
    """

    name = "kafka"
    start_timeout = 90.0

    def __init__(
        self,
        workdir=None,
        *,
        port: int | None = None,
        controller_port: int | None = None,
        heap: str = "512m",
        num_partitions: int = 1,
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(workdir)
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        self.heap = heap
        self.num_partitions = num_partitions
        self.extra_properties = dict(extra_properties or {})
        self.data_dir = self.workdir / "data"
        self.config_path = self.workdir / "server.properties"
        self.log4j_path = self.workdir / "log4j2.properties"

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def info(self) -> dict[str, object]:
        return {"bootstrap_servers": self.bootstrap_servers}

    def _properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "log.dirs": str(self.data_dir),
            "num.partitions": str(self.num_partitions),
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "log.flush.interval.messages": "9223372036854775807",
            # tests send events of fixed dates (2026-01-01...): with the default retention (7 days by the messages'
            # timestamps) the broker's check, every 5 minutes from 30 s after its start, deleted a topic's messages
            # between a test's produce and its read
            "log.retention.ms": "-1",
        }
        props.update(self.extra_properties)
        return props

    def _java(self, main: str, *args: str, heap: str) -> list[str]:
        return [
            java_binary(),
            *java_heap_flags(heap),
            "-XX:+UseG1GC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.log4j_path}",
            *extra_jvm_flags(),
            "-cp",
            str(self._lib() / "*"),
            main,
            *args,
        ]

    def _lib(self) -> Path:
        return require_dir(java_lib_dir() / "kafka", "run scripts/setup-java.sh kafka")

    def _launch(self) -> None:
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self._properties().items()))
        self.log4j_path.write_text(_LOG4J2)
        log = self.workdir / "kafka.log"
        if not (self.data_dir / "meta.properties").exists():
            # a random id; StorageTool would read a leading '-' as an option (Kafka's own Uuid avoids one too)
            cluster_id = "-"
            while cluster_id.startswith("-"):
                cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            argv = self._java(
                "kafka.tools.StorageTool", "format", "-t", cluster_id,
                "-c", str(self.config_path), "--standalone", heap="256m",
            )
            with open(log, "ab") as out:
                done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=120)
            if done.returncode != 0:
                raise ServerStartError(f"kafka StorageTool format failed with code {done.returncode}")
        self.broker = self._spawn(
            ManagedProcess(
                "kafka",
                self._java("kafka.Kafka", str(self.config_path), heap=self.heap),
                log,
                cwd=self.workdir,
            )
        )

    def _probe(self) -> None:
        if not _STARTED.search(self.broker.new_output()):
            raise _NotReady("no 'Kafka Server started' in the log yet")
        # Real protocol check: a metadata request must list our broker.
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "socket.timeout.ms": 2000, "log_level": 3})
        metadata = admin.list_topics(timeout=5)
        if 1 not in metadata.brokers:
            raise _NotReady(f"metadata lists brokers {metadata.brokers}")

    # -- conveniences for tests --------------------------------------------

    def create_topic(self, topic: str, partitions: int = 1, timeout: float = 30.0) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        futures[topic].result(timeout)

