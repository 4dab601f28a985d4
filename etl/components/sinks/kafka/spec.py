"""The kafka sink's spec: rows as Kafka records, exactly once through transactions or at least once."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.base import SinkBase
from etl.spec.sinks import key_expr
from etl.spec.transport import KafkaSecurity, kafka_options_clash


@component("sink", "kafka", builder="etl.components.sinks.kafka.build:KafkaSink")
class KafkaSink(SinkBase):
    """Rows written as JSON records to a Kafka topic."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("kafka",)
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sinks.kafka.sql:map_options"
    REALTIME_WRITER: ClassVar[str | None] = "etl.connectors.kafka_realtime:writer"

    type: Literal["kafka"]
    bootstrap_servers: str = Field(description="Kafka brokers: host:port, comma-separated")
    topic: str = Field(description="topic to write")
    key: str | None = Field(default=None, description="Spark SQL expression for the message key")
    headers: dict[str, str] = Field(default_factory=dict, description="header name -> Spark SQL expression")
    delivery: Literal["exactly_once", "at_least_once"] = Field(
        default="exactly_once", description="exactly_once: one transaction per micro-batch")
    security: KafkaSecurity | None = Field(default=None, description="SASL / TLS (same fields as the kafka source)")
    options: dict[str, str] = Field(default_factory=dict, description="extra producer options (librdkafka names)")

    @model_validator(mode="after")
    def _no_clash(self) -> KafkaSink:
        kafka_options_clash(self.security, self.options)
        return self

    REPLAY: ClassVar[str | None] = (
        "one transaction per batch (transactional.id etl.<pipeline>.<sink>) that also writes a commit marker "
        "(batch id) to topic _etl_commits.<topic>; a replayed batch whose marker is there is skipped; "
        "readers need isolation.level=read_committed")

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        cols = key_expr(self, cx, node, inputs)
        for name, text in self.headers.items():
            cx.expr(node, ("headers", name), text, cols, cx.where(node, f"headers.{name}"))
        return cols

    def is_idempotent(self) -> bool:
        return self.delivery == "exactly_once"

    def output_key(self) -> str | None:
        return f"kafka:{self.bootstrap_servers}/{self.topic}"

    def upsert_key(self) -> str | None:
        return f"message key {self.key} (a compacted topic keeps the latest)" if self.key else None

    @classmethod
    def keyed_mapping(cls, raw: dict) -> bool:
        return bool(raw.get("key"))
