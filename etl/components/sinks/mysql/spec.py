"""The mysql sink's spec: rows into a MySQL or MariaDB table, appended or upserted by key, exactly once."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import SinkBase
from etl.spec.endpoints import mysql_problems
from etl.spec.sinks import named_columns
from etl.spec.transport import MySQLTLS


@component("sink", "mysql", builder="etl.components.sinks.mysql.build:MySQLSink")
class MySQLSink(SinkBase):
    """Rows and a (pipeline, sink, batch) marker written in one transaction."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("db", "rds", "mysql", "jdbc")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sinks.mysql.sql:map_options"

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
        return named_columns(cx, node, inputs, "key", self.key)

    def endpoint_problems(self) -> list[tuple[tuple, Any, str]]:
        return mysql_problems(self)

    @classmethod
    def keyed_mapping(cls, raw: dict) -> bool:
        return bool(raw.get("mode") == "upsert" and raw.get("key"))
