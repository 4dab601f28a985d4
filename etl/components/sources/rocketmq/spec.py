"""The rocketmq source's spec: messages of RocketMQ topics, offsets in the checkpoint."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.sources import MessageSource


@component("source", "rocketmq", builder="etl.components.sources.rocketmq.build:build")
class RocketMQSource(MessageSource):
    """Messages of a RocketMQ topic: per-queue offsets in the checkpoint, replayed after a crash."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("rocketmq", "rocketmq-x", "metaq")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sources.rocketmq.sql:map_options"

    type: Literal["rocketmq"]
    SERVER_FIELD: ClassVar[str | None] = "namesrv"
    namesrv: str = Field(description="name server address, host:port")
    topic: str = Field(description="topic to read")
    group: str = Field(default="etl", description="consumer group")
    tags: str = Field(default="*", description="tag expression, e.g. 'TagA || TagB'")
    starting: Literal["earliest", "latest"] = Field(default="earliest",
                                                    description="where a new checkpoint starts: earliest or latest")
    max_messages_per_trigger: int | None = Field(default=None, ge=1,
                                                 description="messages read per micro-batch at most")

    def declared_columns(self) -> dict[str, str] | None:
        if self.format == "json":
            return self.schema_
        return {"key": "string", self.value_column: "binary" if self.format == "raw" else "string",
                "topic": "string", "timestamp": "timestamp", "tags": "string"}
