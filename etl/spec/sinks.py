"""Sink specs: print, file, kafka, rocketmq, mysql, elasticsearch."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.base import SinkBase
from etl.spec.endpoints import es_problems, mysql_problems
from etl.spec.transport import HTTPTLS, KafkaSecurity, MySQLTLS, kafka_options_clash

_SNK = "etl.connectors.sinks"


@component("sink", "print", builder=f"{_SNK}.print:PrintSink")
class PrintSink(SinkBase):
    """Rows printed on the driver's console, for trying a pipeline out."""

    DRIVER_ONLY: ClassVar[str] = "prints on the driver's console"  # etl.physical's `write` aspect

    type: Literal["print"]
    format: Literal["json", "table"] = Field(default="json", description="json (a line per row) or table")
    max_rows: int = Field(default=20, ge=1, description="rows shown per batch at most")


@component("sink", "file", builder=f"{_SNK}.file:FileSink")
class FileSink(SinkBase):
    """Files per micro-batch, staged by Spark's writer and published by the driver (Hadoop FileSystem API)."""

    type: Literal["file"]
    path: str = Field(description="output folder: a local path (relative paths are resolved from the pipeline "
                                  "file) or any Hadoop URI (file://, hdfs://, s3a:// with its connector)")
    format: Literal["jsonl", "csv", "parquet"] = Field(default="jsonl", description="jsonl, csv or parquet")

    SPARK_WRITER: ClassVar[str] = (
        "Spark's own file writer on the executors into a staging folder through the Hadoop FileSystem of the "
        "path (any Hadoop URI); the driver publishes the batch (manifest, renames)")
    PATH_FIELD: ClassVar[str | None] = "path"

    def engine_aspects(self) -> tuple[str, ...]:
        return ("json",) if self.format == "jsonl" else ()  # how jsonl lines are rendered

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"path:{self.path}"


@component("sink", "kafka", builder=f"{_SNK}.kafka:KafkaSink")
class KafkaSink(SinkBase):
    """Rows written as JSON records to a Kafka topic."""

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
        cols = _key_expr(self, cx, node, inputs)
        for name, text in self.headers.items():
            cx.expr(node, ("headers", name), text, cols, cx.where(node, f"headers.{name}"))
        return cols

    def is_idempotent(self) -> bool:
        return self.delivery == "exactly_once"

    def output_key(self) -> str | None:
        return f"kafka:{self.bootstrap_servers}/{self.topic}"

    def upsert_key(self) -> str | None:
        return f"message key {self.key} (a compacted topic keeps the latest)" if self.key else None


@component("sink", "rocketmq", builder=f"{_SNK}.rocketmq:RocketMQSink")
class RocketMQSink(SinkBase):
    """Rows written as JSON messages to a RocketMQ topic."""

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
        return _key_expr(self, cx, node, inputs)


@component("sink", "mysql", builder=f"{_SNK}.mysql:MySQLSink")
class MySQLSink(SinkBase):
    """Rows and a (pipeline, sink, batch) marker written in one transaction."""

    type: Literal["mysql"]
    host: str = Field(default="127.0.0.1", description="server host name or IP address")
    port: int = Field(default=3306, description="server port")
    database: str = Field(description="database name")
    user: str = Field(description="user name")
    password: str = Field(default="", description="password (from the environment: {{ env('NAME') }})")
    table: str = Field(description="table to write")
    mode: Literal["insert", "upsert", "ignore"] = Field(default="insert",
        description="insert, ignore (INSERT IGNORE) or upsert (ON DUPLICATE KEY UPDATE of the non-key columns)")
    key: list[str] = Field(default_factory=list, description="upsert: key columns")
    create_table: bool = Field(default=False, description="create the table from the input's columns when missing")
    tls: MySQLTLS | None = Field(default=None, description="TLS to the server (none: plain connection)")

    REPLAY: ClassVar[str | None] = "rows and a (pipeline, sink, batch id) row of table _etl_commits in one transaction"

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"mysql:{self.host}:{self.port}/{self.database}.{self.table}"

    def upsert_key(self) -> str | None:
        return f"upsert on ({', '.join(self.key)})" if self.mode == "upsert" and self.key else None

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        return _named(cx, node, inputs, "key", self.key)

    def endpoint_problems(self) -> list[tuple[tuple, Any, str]]:
        return mysql_problems(self)


@component("sink", "elasticsearch", builder=f"{_SNK}.elasticsearch:ElasticsearchSink")
class ElasticsearchSink(SinkBase, HTTPTLS):
    """Bulk indexing with deterministic document ids (idempotent on replay)."""

    type: Literal["elasticsearch"]
    hosts: list[str] = Field(min_length=1, description="http://host:port of Elasticsearch or OpenSearch")
    index: str = Field(description="index to write")
    id_fields: list[str] = Field(default_factory=list,
                                 description="document id from these fields (a hash of the whole row if empty)")
    username: str | None = Field(default=None, description="basic authentication: user name")
    password: str | None = Field(default=None, description="basic authentication: password")

    REPLAY: ClassVar[str | None] = ("_bulk index with deterministic document ids (id_fields, else a hash of the row): "
                                    "a replay overwrites the same documents")

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"es:{','.join(self.hosts)}/{self.index}"

    def upsert_key(self) -> str | None:
        return f"document id from ({', '.join(self.id_fields)})" if self.id_fields else None

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        return _named(cx, node, inputs, "id_fields", self.id_fields)

    def endpoint_problems(self) -> list[tuple[tuple, Any, str]]:
        return es_problems(self)


def _key_expr(spec: Any, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
    """The input's columns, after checking the message key expression."""
    cols = cx.first(inputs)
    if spec.key is not None:
        cx.expr(node, ("key",), spec.key, cols, cx.where(node, "key"))
    return cols


def _named(cx: Any, node: Any, inputs: list, field: str, names: list[str]) -> dict[str, str] | None:
    """The input's columns, after checking that each of `names` (the sink's `field`) is one of them."""
    cols = cx.first(inputs)
    for i, name in enumerate(names):
        cx.need(cols, name, cx.span(node, field, i), cx.where(node, f"{field}[{i}]"))
    return cols


def default_dead_letter(path: str) -> FileSink:
    """The dead-letter sink of a pipeline without `dead_letter:`: jsonl files in `path` (the runtime's folder is
    beside the checkpoint; the physical planner only reads the type and format)."""
    return FileSink(id="dead_letter", type="file", path=path, format="jsonl")
