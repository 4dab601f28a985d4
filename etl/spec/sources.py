"""Source specs: file, generator, kafka, rocketmq, mysql."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.base import MAX_INT64, MIN_INT64, Instant, Model, PositiveDuration, Size, SourceBase
from etl.spec.endpoints import mysql_problems
from etl.spec.transport import KafkaSecurity, MySQLTLS, kafka_options_clash

_SRC = "etl.connectors.sources"
# the versions of java/pom.xml's `spark` profile (tests/unit/test_jars.py compares): Spark's Kafka connector (4.2.0,
# the newest on Maven Central, runs on pyspark 4.3.0) with the token provider the pom pins, MariaDB Connector/J
KAFKA_JARS = ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
              "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0")
MYSQL_JARS = ("org.mariadb.jdbc:mariadb-java-client:3.5.11",)


@component("source", "file", builder=f"{_SRC}.file:build")
class FileSource(SourceBase):
    """Files in a folder (or one file); new files are picked up as they appear."""

    type: Literal["file"]
    path: str = Field(description="file or folder; relative paths are resolved from the pipeline file")
    format: Literal["jsonl", "csv", "text", "parquet"] = Field(default="jsonl",
        description="jsonl, csv, text (a row per line) or parquet")
    header: bool = Field(default=True, description="csv: first line holds column names")
    delimiter: str = Field(default=",", max_length=1, description="csv: the field separator (one character)")
    max_files_per_trigger: int | None = Field(default=None, ge=1, description="new files read per micro-batch at most")
    max_bytes_per_trigger: Size | None = Field(default=None,
                                               description="bytes of new files read per micro-batch at most")
    text_column: str = Field(default="line", description="text: name of the column holding each line")
    static: bool = Field(default=False, description="read once as a table (for lookup joins)")
    tail: bool = Field(default=False, description="text: follow the files by identity (device, inode) and offset, "
                                                  "as tail -F: appended lines are read; renamed, truncated and "
                                                  "recreated files are followed (docs/pipeline-format.md: what "
                                                  "the file source guarantees)")
    PATH_FIELD: ClassVar[str | None] = "path"
    LOOKUP_TABLE: ClassVar[bool] = True

    def engine_aspects(self) -> tuple[str, ...]:
        return {"jsonl": ("reader",), "text": ("lines",)}.get(self.format, ())

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        # a record over ETL_MAX_RECORD_MB (etl/jvm/BoundedLines.java, etl.compile.deadletter's within_record_size),
        # a line that is not UTF-8, malformed json or csv, an event time beyond the horizon
        return True

    def is_static(self) -> bool:
        return self.static

    def files_read_once(self) -> str | None:
        return None if self.static or self.tail else self.path

    def explain_lines(self) -> list[str]:
        tail = ["tail: files followed by (device, inode) and byte offset"] if self.tail else []
        return super().explain_lines() + tail

    @model_validator(mode="after")
    def _tail_reads_text(self) -> FileSource:
        if self.tail and (self.format != "text" or self.static):
            raise ValueError("tail: true follows text files (format: text, not static)")
        if self.tail and (self.max_files_per_trigger or self.max_bytes_per_trigger):
            raise ValueError("tail: true reads what was appended to every file: no max_files_per_trigger or "
                             "max_bytes_per_trigger")
        return self

    @model_validator(mode="after")
    def _parquet_needs_schema(self) -> FileSource:
        if self.format == "parquet" and self.schema_ is None and not self.static:
            raise ValueError("a streaming parquet source needs a declared schema")
        return self

    def declared_columns(self) -> dict[str, str] | None:
        if self.format == "text":
            return {self.text_column: "string"}
        return self.schema_

    def sampled_columns(self, cx: Any, node: Any) -> dict[str, str] | None:
        if self.format in ("jsonl", "csv") and not self.static:  # a stream's columns, as Spark infers them at run
            return cx.inferred_columns(node)
        return None

    def lookup_table_problem(self) -> tuple[str, str] | None:
        if self.format == "text":
            return "a text file cannot be a lookup table", "use format csv, jsonl or parquet"
        return None


Int64 = Annotated[int, Field(ge=MIN_INT64, le=MAX_INT64)]


class FieldGen(Model):
    """How the generator makes one field: exactly one of the keys."""

    choice: list[Any] | None = Field(default=None, description="pick one value (weighted by `weights`)")
    weights: list[float] | None = Field(default=None, description="choice: the relative weight of each value")
    int_range: tuple[Int64, Int64] | None = Field(default=None, description="uniform integer in [lo, hi]")
    float_range: tuple[float, float] | None = Field(default=None, description="uniform number in [lo, hi]")
    sequence: Int64 | None = Field(default=None, description="counter starting at this value")
    ipv4: bool | None = Field(default=None, description="a random IPv4 address")
    template: str | None = Field(default=None, description="text with {field} references to other fields")
    timestamp: Literal["event"] | None = Field(default=None, description="the event time of the generated event")
    const: Any = Field(default=None, description="the same value in every event")

    @model_validator(mode="after")
    def _one(self) -> FieldGen:
        keys = [k for k in ("choice", "int_range", "float_range", "sequence", "ipv4", "template", "timestamp", "const")
                if getattr(self, k) is not None]
        if len(keys) != 1:
            raise ValueError("a generated field needs exactly one of choice, int_range, float_range, sequence, "
                             f"ipv4, template, timestamp, const (got {', '.join(keys) or 'none'})")
        if self.int_range is not None and self.int_range[0] > self.int_range[1]:
            raise ValueError(f"int_range [{self.int_range[0]}, {self.int_range[1]}] is empty: give [low, high]")
        if self.weights is not None and (self.choice is None or len(self.weights) != len(self.choice)):
            raise ValueError("weights must have one number per choice")
        return self


@component("source", "generator", builder=f"{_SRC}.generator:build")
class GeneratorSource(SourceBase):
    """Synthetic, seeded, deterministic events for demos, tests and benchmarks."""

    type: Literal["generator"]
    fields: dict[str, FieldGen] = Field(min_length=1)
    count: int | None = Field(default=None, ge=0, le=MAX_INT64, description="stop after this many events (unbounded if absent)")
    rate: float | None = Field(default=None, gt=0, description="events per second of event time")
    seed: int = Field(default=0, description="random seed: the same seed gives the same events")
    start_time: Instant = Field(default=Instant("2026-01-01T00:00:00Z"), description="event time of the first event (ISO 8601)")
    rows_per_batch: int = Field(default=100_000, ge=1, le=100_000_000, description="events per micro-batch at most")

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        from etl.spec.generated import template_problems

        for name, message, hint in template_problems(self.fields):
            cx.report.error("E102", f"{message} in generator '{node.id}'", cx.span(node, "fields", name, "template"),
                            hint)
        for name in self.fields:  # a field is a column: the checks of a schema's names
            cx.internal(node, name, cx.key_span(node, "fields", name))
        return super().output_columns(cx, node, inputs)

    def declared_columns(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, g in self.fields.items():
            if g.int_range is not None or g.sequence is not None:
                out[name] = "bigint"
            elif g.float_range is not None:
                out[name] = "double"
            elif g.timestamp is not None:
                out[name] = "timestamp"
            elif g.choice is not None and g.choice and all(isinstance(c, int) and not isinstance(c, bool)
                                                          for c in g.choice):
                out[name] = "bigint"
            else:
                out[name] = "string"
        return self.schema_ or out


class _MessageSource(SourceBase):
    LIVE: ClassVar[bool] = True  # events arrive as they happen: event times past now + ETL_EVENT_TIME_HORIZON fail
    format: Literal["json", "text", "raw"] = Field(default="json", description="how to decode message values")
    value_column: str = Field(default="value", description="text/raw: column holding the message body")

    def engine_aspects(self) -> tuple[str, ...]:
        return ("parser",) if self.format == "json" else ()

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return True  # malformed json, an event time beyond the horizon

    def declared_columns(self) -> dict[str, str] | None:
        if self.format != "json":
            return {"key": "string", self.value_column: "string", "topic": "string", "timestamp": "timestamp"}
        return self.schema_


@component("source", "kafka", builder=f"{_SRC}.kafka:build")
class KafkaSource(_MessageSource):
    """Records of Kafka topics (Spark's Kafka connector): offsets in the checkpoint, replayed after a crash."""

    JARS: ClassVar[tuple[str, ...]] = KAFKA_JARS
    REGEX_FIELDS: ClassVar[tuple[str, ...]] = ("pattern",)
    SERVER_FIELD: ClassVar[str | None] = "bootstrap_servers"
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


@component("source", "rocketmq", builder=f"{_SRC}.rocketmq:build")
class RocketMQSource(_MessageSource):
    """Messages of a RocketMQ topic: per-queue offsets in the checkpoint, replayed after a crash."""

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


@component("source", "mysql", builder=f"{_SRC}.mysql:build", reader=f"{_SRC}.mysql:read_mysql_table")
class MySQLSource(SourceBase):
    """A MySQL/MariaDB table, read as a dimension table for lookup joins."""

    STATIC: ClassVar[bool] = True
    JARS: ClassVar[tuple[str, ...]] = MYSQL_JARS  # JDBC (else the Python client: etl.connectors.sources.mysql)
    SERVER_FIELD: ClassVar[str | None] = "host"
    LOOKUP_TABLE: ClassVar[bool] = True
    type: Literal["mysql"]
    host: str = Field(default="127.0.0.1", description="server host name or IP address")
    port: int = Field(default=3306, description="server port")
    database: str = Field(description="database name")
    user: str = Field(description="user name")
    password: str = Field(default="", description="password (from the environment: {{ env('NAME') }})")
    table: str | None = Field(default=None, description="table to read (or `query`)")
    query: str | None = Field(default=None, description="SELECT whose rows are the table (or `table`)")
    refresh: PositiveDuration | None = Field(default=None, description="reload the table this often")
    tls: MySQLTLS | None = Field(default=None, description="TLS to the server (none: plain connection)")

    @model_validator(mode="after")
    def _table_or_query(self) -> MySQLSource:
        if (self.table is None) == (self.query is None):
            raise ValueError("give exactly one of `table` or `query`")
        return self

    def endpoint_problems(self) -> list[tuple[tuple, Any, str]]:
        return mysql_problems(self)
