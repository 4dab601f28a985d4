"""The mysql source's spec: a MySQL or MariaDB table read whole (a lookup's dimension table) or by query."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.base import PositiveDuration, SourceBase
from etl.spec.endpoints import mysql_problems
from etl.spec.sources import MYSQL_JARS
from etl.spec.transport import MySQLTLS


@component("source", "mysql", builder="etl.components.sources.mysql.build:build", reader="etl.components.sources.mysql.build:read_mysql_table")
class MySQLSource(SourceBase):
    """A MySQL/MariaDB table, read as a dimension table for lookup joins."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("db", "rds", "mysql", "jdbc")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sources.mysql.sql:map_options"

    STATIC: ClassVar[bool] = True
    JARS: ClassVar[tuple[str, ...]] = MYSQL_JARS  # JDBC (else the Python client: etl.components.sources.mysql.build)
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
