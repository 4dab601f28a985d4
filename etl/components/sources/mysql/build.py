"""mysql source: a MySQL/MariaDB table (or query) read as a dimension table for lookup joins.

Two readers of the same spec (`etl.spec.sources.MySQLSource`), for the lookup transform:

* `read_mysql_table(spec) -> pyarrow.Table`: PyMySQL on the driver; columns
  typed by the spec's `schema` when declared (else inferred from the values).
  For small and medium tables (broadcast / rocksdb stores); call it again to
  refresh (`spec.refresh` seconds).
* `read_mysql_jdbc(spark, spec) -> DataFrame`: Spark's JDBC reader with the
  MariaDB driver from java/lib/spark (scripts/setup-java.sh); a batch
  DataFrame, read again by each action. The URL is built from the checked
  host and database only; everything else is a driver property
  (etl.connectors.mysql_conn).
* `tls`: TLS settings for both readers (a client certificate makes `build`
  use the PyMySQL reader: Connector/J reads those from Java key stores only).

`build(ctx, node)` (the registry builder) returns the JDBC DataFrame when the
driver is on the classpath, else one made from `read_mysql_table`. Errors are
`MySQLReadError` (transient: server unreachable; terminal: credentials, unknown
table, SQL) with the component's name.
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

import pyarrow as pa

from etl.connectors.api import CompileContext, CompileError, MissingConnector, require_class
from etl.connectors.mysql_conn import (PLAIN_HINT, TLS_HINT, ConnectionSettingsError, connect_kwargs, jdbc_properties,
                                       jdbc_supported, jdbc_url)
from etl.components.sinks.mysql.build import classify, quote
from etl.graph.model import Node
from etl.runtime.sink import TerminalError, TransientError

DRIVER = "org.mariadb.jdbc.Driver"

_ARROW = {
    "string": pa.string(), "varchar": pa.string(), "char": pa.string(),
    "boolean": pa.bool_(), "bool": pa.bool_(),
    "tinyint": pa.int8(), "byte": pa.int8(), "smallint": pa.int16(), "short": pa.int16(),
    "int": pa.int32(), "integer": pa.int32(), "bigint": pa.int64(), "long": pa.int64(),
    "float": pa.float32(), "real": pa.float32(), "double": pa.float64(),
    "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"), "date": pa.date32(),
    "binary": pa.binary(),
}
_DECIMAL = re.compile(r"^decimal\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


class MySQLReadError(RuntimeError):
    def __init__(self, message: str, transient: bool):
        super().__init__(message)
        self.transient = transient


def arrow_type(spark_type: str) -> pa.DataType | None:
    t = spark_type.strip().lower()
    m = _DECIMAL.match(t)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    if t.startswith(("varchar", "char")):
        return pa.string()
    return _ARROW.get(t)


def _select(spec: Any) -> str:
    if spec.query is not None:
        return spec.query
    return f"SELECT * FROM {quote(spec.table, 'table name')}"


def _label(spec: Any) -> str:
    return f"mysql source '{spec.id}' ({spec.user}@{spec.host}:{spec.port}/{spec.database})"


def read_mysql_table(spec: Any, timeout: float = 10.0, base_dir: str | None = None) -> pa.Table:
    """The whole table (or query result) as Arrow, typed by `spec.schema` when declared."""
    import pymysql

    try:
        tls = connect_kwargs(spec.tls, base_dir)
    except ConnectionSettingsError as e:
        raise MySQLReadError(f"{_label(spec)}: {e}", False) from None
    try:
        try:
            conn = pymysql.connect(host=spec.host, port=int(spec.port), user=spec.user, password=spec.password,
                                   database=spec.database, charset="utf8mb4", connect_timeout=timeout,
                                   read_timeout=300, init_command="SET time_zone = '+00:00'", **tls)
        except pymysql.err.MySQLError as e:
            raise classify(e, "cannot connect", spec.tls) from e
        try:
            with conn.cursor() as cur:
                cur.execute(_select(spec))
                names = [d[0] for d in cur.description]
                rows = cur.fetchall()
        except pymysql.err.MySQLError as e:
            raise classify(e, "cannot read") from e
        finally:
            conn.close()
    except (TransientError, TerminalError) as e:
        raise MySQLReadError(f"{_label(spec)}: {e}", isinstance(e, TransientError)) from e
    except OSError as e:
        raise MySQLReadError(f"{_label(spec)}: cannot connect: {e}", True) from e
    declared = {k: arrow_type(v) for k, v in (spec.schema_ or {}).items()}
    columns = {}
    for i, name in enumerate(names):
        values = [r[i] for r in rows]
        typ = declared.get(name)
        if typ is not None and pa.types.is_timestamp(typ) and typ.tz:

            values = [v.replace(tzinfo=UTC) if v is not None and getattr(v, "tzinfo", 1) is None else v
                      for v in values]
        try:
            columns[name] = pa.array(values, type=typ) if typ is not None else pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise MySQLReadError(f"{_label(spec)}: column '{name}' does not convert to "
                                 f"{spec.schema_[name] if typ is not None else 'one type'}: {e}", False) from e
    if spec.schema_:
        missing = [c for c in spec.schema_ if c not in columns]
        if missing:
            raise MySQLReadError(f"{_label(spec)}: declared column(s) {', '.join(missing)} not in the result "
                                 f"({', '.join(names)})", False)
        return pa.table({c: columns[c] for c in spec.schema_})
    return pa.table(columns)


def read_mysql_jdbc(spark: Any, spec: Any, base_dir: str | None = None) -> Any:
    """A batch DataFrame over the table (or query) through Spark JDBC; columns cast to the declared schema.

    The URL holds only the checked host, port and database; user, password, timeouts and TLS settings
    are driver properties."""
    from pyspark.sql import functions as F

    try:
        url = jdbc_url(spec.host, spec.port, spec.database)
    except ConnectionSettingsError as e:
        raise MySQLReadError(f"{_label(spec)}: {e}", False) from None
    reader = (spark.read.format("jdbc").option("url", url).option("driver", DRIVER)
              .option("user", spec.user).option("password", spec.password)
              .option("sessionInitStatement", "SET time_zone = '+00:00'"))
    for k, v in jdbc_properties(spec.tls, base_dir).items():
        reader = reader.option(k, v)
    if spec.query is not None:
        reader = reader.option("query", spec.query)
    else:
        reader = reader.option("dbtable", quote(spec.table, "table name"))
    df = reader.load()
    if spec.schema_:
        df = df.select(*[F.col(f"`{c}`").cast(t).alias(c) for c, t in spec.schema_.items()])
    return df


def build(ctx: CompileContext, node: Node) -> Any:
    spec = node.spec
    try:
        require_class(ctx.spark, DRIVER, f"mysql source '{node.id}'")
        jdbc = jdbc_supported(spec.tls)
    except MissingConnector:
        jdbc = False
    try:
        if jdbc:
            return read_mysql_jdbc(ctx.spark, spec, ctx.graph.base_dir)
        table = read_mysql_table(spec, base_dir=ctx.graph.base_dir)
    except MySQLReadError as e:
        raise CompileError(str(e), node, _field(spec, str(e), e.transient), _hint(spec, str(e)),
                           code="E407") from None
    except Exception as e:  # noqa: BLE001 - py4j wraps the driver's SQLException
        first = _driver_reason(e)
        raise CompileError(f"{_label(spec)}: {first}", node, _field(spec, first, False), _hint(spec, first),
                           code="E407") from None
    return ctx.spark.createDataFrame(table)


_TLS_WORDS = ("TLS", "SSL", "certificate", "PKIX", "handshake")


def _driver_reason(e: Exception) -> str:
    """The driver's own message out of a py4j-wrapped error: the first java.sql exception of its causes."""
    cause = getattr(e, "_origin", None)
    for _ in range(20):
        if cause is None:
            break
        text = str(cause.toString())
        if text.startswith("java.sql."):
            return re.sub(r"\(conn=\d+\) |[\w.$]+(Exception|Error): ", "", text)
        cause = cause.getCause()
    lines = [x.strip() for x in str(e).strip().splitlines() if x.strip()]
    return lines[0] if lines else type(e).__name__


def _field(spec: Any, reason: str, transient: bool) -> str | None:
    if spec.tls is not None and any(w in reason for w in _TLS_WORDS):
        return "tls"
    return "host" if transient else None


def _hint(spec: Any, reason: str) -> str | None:
    if any(w in reason for w in _TLS_WORDS):
        return TLS_HINT
    if "Access denied" in reason and "check user and password" not in reason:  # the JDBC reader's message
        return "check user and password" + (PLAIN_HINT if spec.tls is None or spec.tls.mode == "disabled" else "")
    return None
