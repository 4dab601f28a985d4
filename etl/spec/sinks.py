"""Sink specs: print, file, kafka, rocketmq, mysql, elasticsearch."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.base import SinkBase
from etl.spec.transport import HTTPTLS, KafkaSecurity, MySQLTLS, kafka_options_clash

_SNK = "etl.connectors.sinks"


@component("sink", "print", builder=f"{_SNK}.print:PrintSink")
class PrintSink(SinkBase):
    type: Literal["print"]
    format: Literal["json", "table"] = "json"
    max_rows: int = Field(default=20, ge=1, description="rows shown per batch at most")


@component("sink", "file", builder=f"{_SNK}.file:FileSink")
class FileSink(SinkBase):
    """One file per micro-batch, written under a temporary name and renamed atomically."""

    type: Literal["file"]
    path: str = Field(description="output folder; relative paths are resolved from the pipeline file")
    format: Literal["jsonl", "csv", "parquet"] = "jsonl"

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"path:{self.path}"


@component("sink", "kafka", builder=f"{_SNK}.kafka:KafkaSink")
class KafkaSink(SinkBase):
    type: Literal["kafka"]
    bootstrap_servers: str
    topic: str
    key: str | None = Field(default=None, description="Spark SQL expression for the message key")
    headers: dict[str, str] = Field(default_factory=dict, description="header name -> Spark SQL expression")
    delivery: Literal["exactly_once", "at_least_once"] = Field(
        default="exactly_once", description="exactly_once: one transaction per micro-batch")
    security: KafkaSecurity | None = Field(default=None, description="SASL / TLS (same fields as the kafka source)")
    options: dict[str, str] = Field(default_factory=dict, description="extra producer options (librdkafka names)")

    @model_validator(mode="after")
    def _no_clash(self) -> "KafkaSink":
        kafka_options_clash(self.security, self.options)
        return self

    def is_idempotent(self) -> bool:
        return self.delivery == "exactly_once"

    def output_key(self) -> str | None:
        return f"kafka:{self.bootstrap_servers}/{self.topic}"


@component("sink", "rocketmq", builder=f"{_SNK}.rocketmq:RocketMQSink")
class RocketMQSink(SinkBase):
    type: Literal["rocketmq"]
    namesrv: str
    topic: str
    tag: str | None = None
    key: str | None = Field(default=None, description="Spark SQL expression for the message key")
    group: str = "etl-producer"


@component("sink", "mysql", builder=f"{_SNK}.mysql:MySQLSink")
class MySQLSink(SinkBase):
    """Rows and a (pipeline, sink, batch) marker written in one transaction."""

    type: Literal["mysql"]
    host: str = "127.0.0.1"
    port: int = 3306
    database: str
    user: str
    password: str = ""
    table: str
    mode: Literal["insert", "upsert", "ignore"] = "insert"
    key: list[str] = Field(default_factory=list, description="upsert: key columns")
    create_table: bool = Field(default=False, description="create the table from the input's columns when missing")
    tls: MySQLTLS | None = Field(default=None, description="TLS to the server (none: plain connection)")

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"mysql:{self.host}:{self.port}/{self.database}.{self.table}"


@component("sink", "elasticsearch", builder=f"{_SNK}.elasticsearch:ElasticsearchSink")
class ElasticsearchSink(SinkBase, HTTPTLS):
    """Bulk indexing with deterministic document ids (idempotent on replay)."""

    type: Literal["elasticsearch"]
    hosts: list[str] = Field(min_length=1, description="http://host:port of Elasticsearch or OpenSearch")
    index: str
    id_fields: list[str] = Field(default_factory=list,
                                 description="document id from these fields (a hash of the whole row if empty)")
    username: str | None = None
    password: str | None = None

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"es:{','.join(self.hosts)}/{self.index}"
