"""mysql source: a MySQL/MariaDB table (or query) read as a dimension table for lookup joins.

Two readers of the same spec (`etl.spec.sources.MySQLSource`), for the lookup transform:

* `read_mysql_table(spec) -> pyarrow.Table`: PyMySQL on the driver; columns
  typed by the spec's `schema` when declared (else inferred from the values).
  For small and medium tables (broadcast / rocksdb stores); call it again to
  refresh (`spec.refresh` seconds).
* `read_mysql_jdbc(spark, spec) -> DataFrame`: Spark's JDBC reader with the
  MariaDB driver from java/lib/spark (scripts/setup-java.sh); a batch
  DataFrame, read again by each action.

`build(ctx, node)` (the registry builder) returns the JDBC DataFrame when the
driver is on the classpath, else one made from `read_mysql_table`. Errors are
`MySQLReadError` (transient: server unreachable; terminal: credentials, unknown
table, SQL) with the component's name.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from etl.compile.context import CompileContext, CompileError
from etl.graph.model import Node

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
    from etl.connectors.sinks.mysql import quote

    if spec.query is not None:
        return spec.query
    return f"SELECT * FROM {quote(spec.table, 'table name')}"


def _label(spec: Any) -> str:
    return f"mysql source '{spec.id}' ({spec.user}@{spec.host}:{spec.port}/{spec.database})"


def read_mysql_table(spec: Any, timeout: float = 10.0) -> pa.Table:
    """The whole table (or query result) as Arrow, typed by `spec.schema` when declared."""
    import pymysql

    from etl.connectors.sinks.mysql import classify
    from etl.runtime.sink import TerminalError, TransientError

    try:
        try:
            conn = pymysql.connect(host=spec.host, port=int(spec.port), user=spec.user, password=spec.password,
                                   database=spec.database, charset="utf8mb4", connect_timeout=timeout,
                                   read_timeout=300, init_command="SET time_zone = '+00:00'")
        except pymysql.err.MySQLError as e:
            raise classify(e, "cannot connect") from e
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
            from datetime import timezone

            values = [v.replace(tzinfo=timezone.utc) if v is not None and getattr(v, "tzinfo", 1) is None else v
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


def jdbc_url(spec: Any) -> str:
    """`jdbc:mysql:` so Spark picks its MySQL dialect; the MariaDB driver accepts it with permitMysqlScheme."""
    return f"jdbc:mysql://{spec.host}:{int(spec.port)}/{spec.database}?permitMysqlScheme&connectTimeout=10000"


def read_mysql_jdbc(spark: Any, spec: Any) -> Any:
    """A batch DataFrame over the table (or query) through Spark JDBC; columns cast to the declared schema."""
    from pyspark.sql import functions as F

    reader = (spark.read.format("jdbc").option("url", jdbc_url(spec)).option("driver", DRIVER)
              .option("user", spec.user).option("password", spec.password)
              .option("sessionInitStatement", "SET time_zone = '+00:00'"))
    if spec.query is not None:
        reader = reader.option("query", spec.query)
    else:
        from etl.connectors.sinks.mysql import quote

        reader = reader.option("dbtable", quote(spec.table, "table name"))
    df = reader.load()
    if spec.schema_:
        df = df.select(*[F.col(f"`{c}`").cast(t).alias(c) for c, t in spec.schema_.items()])
    return df


def build(ctx: CompileContext, node: Node) -> Any:
    from etl.runtime.session import MissingConnector, require_class

    spec = node.spec
    try:
        require_class(ctx.spark, DRIVER, f"mysql source '{node.id}'")
        jdbc = True
    except MissingConnector:
        jdbc = False
    try:
        if jdbc:
            return read_mysql_jdbc(ctx.spark, spec)
        table = read_mysql_table(spec)
    except MySQLReadError as e:
        raise CompileError(str(e), node, "host" if e.transient else None, code="E407") from None
    except Exception as e:  # noqa: BLE001 - py4j wraps the driver's SQLException
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CompileError(f"{_label(spec)}: {first}", node, code="E407") from None
    return ctx.spark.createDataFrame(table)
