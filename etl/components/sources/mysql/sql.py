"""rsqldb's and Flink's JDBC table options (url, tableName, userName, password, cacheTTLMs / lookup.cache.ttl)
-> the mysql source (a lookup's dimension table)."""

from __future__ import annotations

from etl.spec.endpoints import JDBC_URL
from etl.sql.connectors import Mapped, Opts, ms


def connection(o: Opts, m: Mapped) -> None:
    """The server, database, table and login a JDBC table names (a source's and a sink's)."""
    url = o.get("url")
    if url is None:
        o.require(m, "database", "url")
    else:
        u = JDBC_URL.match(str(url.value))
        if u is None:
            o.report.error("E102", f"invalid JDBC url '{url.value}'", url.value_span,
                           "write 'jdbc:mysql://host:3306/database'")
        else:
            o.put(m, "host", u.group(1), url)
            if u.group(2):
                o.put(m, "port", int(u.group(2)), url)
            o.put(m, "database", u.group(3), url)
    o.require(m, "table", "tableName", "table-name")
    o.require(m, "user", "userName", "username")
    o.copy(m, "password", "password")


def map_options(o: Opts, m: Mapped) -> None:
    connection(o, m)
    o.copy(m, "refresh", "cacheTTLMs", "lookup.cache.ttl", conv=ms)
    if o.table.schema():
        m.spec["schema"] = o.table.schema()
