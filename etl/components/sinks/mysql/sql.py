"""rsqldb's and Flink's JDBC table options -> the mysql sink (a PRIMARY KEY: upsert by it)."""

from __future__ import annotations

from etl.sql.connectors import Mapped, Opts
from etl.components.sources.mysql.sql import connection


def map_options(o: Opts, m: Mapped) -> None:
    connection(o, m)
    if o.table.primary_key:
        m.spec.update(mode="upsert", key=list(o.table.primary_key))
