"""Real servers for integration tests: Kafka, MariaDB, OpenSearch, RocketMQ.

Each server starts on 127.0.0.1 in its own temp work dir, waits for a real
protocol-level readiness check, and can be stopped and started again on the
same data and ports. Prerequisites: scripts/setup-java.sh (Java artifacts)
and scripts/setup-servers.sh (MariaDB, Python clients). See docs/servers.md.

pytest fixtures (session-scoped) live in tests.servers.fixtures.
"""

from ._base import Outage, Server, ServerStartError
from .kafka import KafkaServer
from .kafka_sasl import KafkaSaslServer
from .mariadb import MariaDBServer, MariaDBTLSServer
from .opensearch import OpenSearchServer
from .rocketmq import RocketMQServer, remoting_call

__all__ = [
    "KafkaSaslServer",
    "KafkaServer",
    "MariaDBServer",
    "MariaDBTLSServer",
    "OpenSearchServer",
    "Outage",
    "RocketMQServer",
    "Server",
    "ServerStartError",
    "remoting_call",
]
