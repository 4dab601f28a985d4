"""rsqldb's rocketmq table options -> the rocketmq sink."""

from __future__ import annotations

from etl.sql.connectors import Mapped, Opts
from etl.components.sources.rocketmq.sql import connection


def map_options(o: Opts, m: Mapped) -> None:
    connection(o, m)
    o.copy(m, "tag", "tag")
