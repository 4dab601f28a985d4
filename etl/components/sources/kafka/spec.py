"""The kafka source's spec: records of Kafka topics, offsets in the checkpoint."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.sources import KAFKA_JARS, MessageSource
from etl.spec.transport import KafkaSecurity, kafka_options_clash


@component("source", "kafka", builder="etl.components.sources.kafka.build:build")
class KafkaSource(MessageSource):
    """Records of Kafka topics (Spark's Kafka connector): offsets in the checkpoint, replayed after a crash."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("kafka",)
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sources.kafka.sql:map_options"

    JARS: ClassVar[tuple[str, ...]] = KAFKA_JARS
    REGEX_FIELDS: ClassVar[tuple[str, ...]] = ("pattern",)
    SERVER_FIELD: ClassVar[str | None] = "bootstrap_servers"
    REALTIME: ClassVar[bool] = True
    type: Literal["kafka"]
    bootstrap_servers: str = Field(description="Kafka brokers: host:port, comma-separated")
    topics: list[str] | None = Field(default=None, description="topics to read (or `pattern`)")
    pattern: str | None = Field(default=None, description="subscribe to topics matching this regex")
    starting_offsets: Literal["earliest", "latest"] | dict[str, dict[str, int]] = Field(default="earliest",
        description="where a new checkpoint starts: earliest, latest or {topic: {partition: offset}}")
    max_offsets_per_trigger: int | None = Field(default=None, ge=1, description="records read per micro-batch at most")
    security: KafkaSecurity | None = Field(default=None, description="SASL / TLS (same fields as the kafka sink)")
    options: dict[str, str] = Field(default_factory=dict, description="extra consumer options (Java client names)")

    def declared_columns(self) -> dict[str, str] | None:
        if self.format == "json":
            return self.schema_
        return {"key": "string", self.value_column: "binary" if self.format == "raw" else "string",
                "topic": "string", "timestamp": "timestamp", "headers": "map<string,string>"}

    @model_validator(mode="after")
    def _topics_or_pattern(self) -> KafkaSource:
        if (self.topics is None) == (self.pattern is None):
            raise ValueError("give exactly one of `topics` or `pattern`")
        kafka_options_clash(self.security, self.options)
        return self
