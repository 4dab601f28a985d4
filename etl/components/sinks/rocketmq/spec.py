"""The rocketmq sink's spec: rows as RocketMQ messages."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import SinkBase
from etl.spec.sinks import key_expr


@component("sink", "rocketmq", builder="etl.components.sinks.rocketmq.build:RocketMQSink")
class RocketMQSink(SinkBase):
    """Rows written as JSON messages to a RocketMQ topic."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("rocketmq", "rocketmq-x", "metaq")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sinks.rocketmq.sql:map_options"

    type: Literal["rocketmq"]
    namesrv: str = Field(description="name server: host:port")
    topic: str = Field(description="topic to write")
    tag: str | None = Field(default=None, description="tag of every message")
    key: str | None = Field(default=None, description="Spark SQL expression for the message key")
    group: str = Field(default="etl-producer", description="producer group")

    REPLAY: ClassVar[str | None] = (
        "no transaction across a batch; each message carries a deterministic etl_msg_id "
        "(<pipeline>:<sink>:<query>:<run>:<batch>:<row hash>) for consumers to dedup, and a replayed "
        "batch skips the messages it reads back from the topic")

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        return key_expr(self, cx, node, inputs)
