"""mysql sink (MySQL / MariaDB, PyMySQL): each micro-batch in one transaction, exactly once.

* The transaction first inserts the batch's marker row into `_etl_commits`
  (primary key pipeline, sink, query, checkpoint id, batch id), then the rows
  in multi-row INSERTs of `batch_size` rows, then commits: rows and marker
  become visible together. `is_committed` reads the marker, so a batch Spark
  replays after a crash is skipped. A second writer of the same batch blocks
  on the marker row and then fails on its key: it can never double the rows.
* Modes: `insert`, `ignore` (INSERT IGNORE), `upsert` (INSERT ... ON
  DUPLICATE KEY UPDATE of the non-key columns; `key` names the key columns).
* Statements are parameterized; table and column names are validated and
  quoted with backticks. Timestamps are written in UTC (session time_zone
  +00:00); nested values (arrays, maps, structs) as JSON text; NaN/inf as NULL.
* `tls`: TLS to the server (etl.connectors.mysql_conn): `mode` required /
  verify_ca / verify_identity with `ca_file` (and `cert_file`/`key_file`); a
  certificate that does not verify is a terminal error, never retried.
* `create_table: true` creates a missing table from the batch's columns
  (primary key = `key`).
* A row the server rejects on its own (value too long or out of range under
  strict mode, incorrect value, NULL in a NOT NULL column, duplicate key in
  `insert` mode, foreign key or CHECK constraint: REJECT_CODES) goes to the
  pipeline's dead letters, stage = the sink's id, reason
  `mysql <code>: <server message>`, payload = the row as JSON; the batch's other
  rows and its marker commit together. The chunk that holds it is rolled back to
  a savepoint and written again row by row, each row under its own savepoint.
* Connection errors, deadlocks and lock waits are transient: the transaction
  is rolled back and the whole batch is written again in a new one (its rows
  are kept until it commits). Bad credentials, an unknown database, table or
  column and SQL errors are terminal.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import math
import re
from typing import Any

import pyarrow as pa

from etl.connectors.mysql_conn import PLAIN_HINT, TLS_HINT, ConnectionSettingsError, connect_kwargs, tls_failure
from etl.connectors.server import ServerSink, run_tag
from etl.runtime.sink import SinkContext, TerminalError, TransientError

MARKERS = "_etl_commits"
KEEP_MARKERS = 1000  # marker rows kept per (pipeline, sink, query, checkpoint)
IDENT = re.compile(r"^[^`\x00/\\.]{1,64}$")

# MySQL / MariaDB error codes worth retrying: the server or the connection went away, a lock could not be had.
TRANSIENT_CODES = frozenset({
    1040,  # too many connections
    1053,  # server shutdown in progress
    1205,  # lock wait timeout
    1213,  # deadlock
    1317,  # query interrupted
    1927,  # connection killed (MariaDB)
    2002, 2003, 2006, 2013, 2055,  # cannot connect, server gone away, lost connection
    4031,  # disconnected by the server (inactivity)
})
# Errors of one row, not of the statement or the connection: the row goes to dead letters, the others commit.
REJECT_CODES = frozenset({
    1048,  # column cannot be null
    1062,  # duplicate entry for a unique key
    1216, 1452,  # foreign key: no parent row
    1264,  # out of range value
    1265,  # data truncated
    1292, 1366,  # incorrect (datetime, integer, string ...) value
    1406,  # data too long for column
    3819, 4025,  # CHECK constraint violated (MySQL, MariaDB)
})
HINTS = {
    1044: "the user has no access to this database",
    1045: "check user and password",
    1049: "create the database or fix `database`",
    1054: "the table's columns differ from the pipeline's output columns",
    1062: "a row repeats a unique key of the table: use mode upsert or ignore",
    1142: "the user lacks a privilege on this table",
    1146: "create the table, or set `create_table: true`",
    1698: "check user and password",
}


def quote(name: str, what: str = "identifier") -> str:
    """`name` quoted with backticks, after checking it is a plain MySQL identifier."""
    if not isinstance(name, str) or not IDENT.match(name) or name != name.strip():
        raise TerminalError(f"invalid {what} {name!r}: up to 64 characters, no backtick, dot, slash or NUL")
    return f"`{name}`"


def classify(e: Exception, what: str, tls: Any = None) -> Exception:
    """A PyMySQL error as TransientError or TerminalError with a readable message (`tls`: the spec's)."""
    import pymysql

    refused = tls_failure(e)
    if refused is not None:  # a certificate that does not verify does not start to verify later
        return TerminalError(f"{what}: {refused}; {TLS_HINT}")
    code = e.args[0] if e.args and isinstance(e.args[0], int) else None
    text = e.args[1] if len(e.args) > 1 else str(e)
    msg = f"{what}: {text}" + (f" (MySQL error {code})" if code else "")
    if code in HINTS:
        msg += f"; {HINTS[code]}"
        if code == 1045 and (tls is None or tls.mode == "disabled"):
            msg += PLAIN_HINT
    if isinstance(e, (pymysql.err.InterfaceError, OSError)) or code in TRANSIENT_CODES:
        return TransientError(msg)
    return TerminalError(msg)


def column_type(field: pa.Field, is_key: bool) -> str:
    t = field.type
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int8(t):
        return "TINYINT"
    if pa.types.is_int16(t):
        return "SMALLINT"
    if pa.types.is_int32(t):
        return "INT"
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_decimal(t):
        return f"DECIMAL({min(t.precision, 65)},{min(t.scale, 30)})"
    if pa.types.is_timestamp(t):
        return "DATETIME(6)"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "VARBINARY(255)" if is_key else "LONGBLOB"
    return "VARCHAR(255)" if is_key else "LONGTEXT"


def _clean(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _json_value(v: Any) -> Any:
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    return str(v) if isinstance(v, decimal.Decimal) else repr(v)


def rejected_code(e: Exception) -> int | None:
    """The error code when `e` rejects one row (REJECT_CODES), else None."""
    code = e.args[0] if e.args and isinstance(e.args[0], int) else None
    return code if code in REJECT_CODES else None


class MySQLSink(ServerSink):
    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self.conn: Any = None
        self._tag: str | None = None
        self.table = quote(spec.table, "table name")
        for k in spec.key:
            quote(k, "key column")
        self._sql: str | None = None
        self._columns: list[str] = []
        self._prepared = False
        self._chunks: list[list[tuple]] = []
        self._open = False  # a transaction of the current batch is open on self.conn
        self._batch: int | None = None

    @property
    def server(self) -> str:
        return f"{self.spec.user}@{self.spec.host}:{self.spec.port}/{self.spec.database}"

    # --------------------------------------------------------- connection
    def _connect(self) -> Any:
        if self.conn is not None:
            return self.conn
        try:
            import pymysql
        except ImportError as e:
            raise TerminalError("the mysql sink needs the PyMySQL package: pip install PyMySQL") from e
        try:
            tls = connect_kwargs(self.spec.tls, self.ctx.base_dir)
        except ConnectionSettingsError as e:
            raise TerminalError(str(e)) from None
        try:
            self.conn = pymysql.connect(host=self.spec.host, port=int(self.spec.port), user=self.spec.user,
                                        password=self.spec.password, database=self.spec.database,
                                        charset="utf8mb4", autocommit=False, connect_timeout=5,
                                        read_timeout=60, write_timeout=60,
                                        init_command="SET time_zone = '+00:00'", **tls)
        except pymysql.err.MySQLError as e:
            raise classify(e, f"cannot connect to {self.server}", self.spec.tls) from e
        except OSError as e:
            raise TransientError(f"cannot connect to {self.server}: {e}") from e
        self._prepared = False
        return self.conn

    def _drop(self) -> None:
        conn, self.conn = self.conn, None
        self._open = False
        if conn is not None:
            with contextlib.suppress(Exception):  # the connection is already broken
                conn.close()

    def _exec(self, what: str, fn: Any) -> Any:
        """Run fn(cursor); on failure roll back, drop a broken connection, raise Transient/Terminal."""
        import pymysql

        conn = self._connect()
        try:
            with conn.cursor() as cur:
                return fn(cur)
        except (pymysql.err.MySQLError, OSError) as e:
            err = classify(e, what)
            self._open = False
            if isinstance(err, TransientError):
                self._drop()
            else:
                try:
                    conn.rollback()
                except Exception:  # noqa: BLE001
                    self._drop()
            raise err from e

    def _ensure_markers(self, cur: Any) -> None:
        cur.execute(f"CREATE TABLE IF NOT EXISTS `{MARKERS}` ("
                    "pipeline VARCHAR(128) NOT NULL, sink VARCHAR(128) NOT NULL, query VARCHAR(128) NOT NULL, "
                    "run VARCHAR(64) NOT NULL, batch_id BIGINT NOT NULL, rows_written BIGINT NOT NULL DEFAULT 0, "
                    "committed_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), "
                    "PRIMARY KEY (pipeline, sink, query, run, batch_id)) ENGINE=InnoDB")

    @property
    def tag(self) -> str:
        if self._tag is None:  # read once the query started (its checkpoint holds the id)
            self._tag = run_tag(self.ctx)
        return self._tag

    def _marker_key(self, batch_id: int | None) -> tuple:
        return (self.ctx.pipeline, self.ctx.sink_id, self.ctx.scope, self.tag, batch_id)

    # ---------------------------------------------------- replay protection
    def committed(self, batch_id: int) -> bool:
        def check(cur: Any) -> bool:
            if not self._prepared:
                self._ensure_markers(cur)
            cur.execute(f"SELECT 1 FROM `{MARKERS}` WHERE pipeline=%s AND sink=%s AND query=%s AND run=%s "
                        "AND batch_id=%s", self._marker_key(batch_id))
            found = cur.fetchone() is not None
            self.conn.rollback()  # no snapshot kept open between batches
            return found

        return self._exec("cannot read the commit marker", check)

    # ------------------------------------------------------------ shaping
    def prepare_columns(self, df: Any) -> list[Any]:
        from pyspark.sql import functions as F

        cols = []
        for f in df.schema.fields:
            c = F.col(f"`{f.name}`")
            if f.dataType.typeName() in ("array", "map", "struct", "variant"):
                c = F.to_json(c)
            cols.append(c.alias(f.name))
        return cols

    def _statement(self, schema: pa.Schema) -> str:
        names = list(schema.names)
        cols = ", ".join(quote(n, "column name") for n in names)
        marks = ", ".join(["%s"] * len(names))
        verb = "INSERT IGNORE INTO" if self.spec.mode == "ignore" else "INSERT INTO"
        sql = f"{verb} {self.table} ({cols}) VALUES ({marks})"
        if self.spec.mode == "upsert":
            keys = set(self.spec.key)
            rest = [n for n in names if n not in keys] or names[:1]
            sql += " ON DUPLICATE KEY UPDATE " + ", ".join(f"{quote(n)}=VALUES({quote(n)})" for n in rest)
        return sql

    def _create_table(self, cur: Any, schema: pa.Schema) -> None:
        keys = list(self.spec.key)
        missing = [k for k in keys if k not in schema.names]
        if missing:
            raise TerminalError(f"key column(s) {', '.join(missing)} are not among the output columns "
                                f"({', '.join(schema.names)})")
        defs = [f"{quote(f.name, 'column name')} {column_type(f, f.name in keys)}"
                + (" NOT NULL" if f.name in keys else "") for f in schema]
        if keys:
            defs.append("PRIMARY KEY (" + ", ".join(quote(k) for k in keys) + ")")
        cur.execute(f"CREATE TABLE IF NOT EXISTS {self.table} ({', '.join(defs)}) "
                    "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")

    # -------------------------------------------------------------- batch
    def begin(self, batch_id: int, schema: pa.Schema) -> None:
        self._batch = batch_id
        self._chunks = []
        self.rejects.clear()
        if self._sql is None:
            self._sql = self._statement(schema)
        self._schema = schema
        self._start()

    def _start(self) -> None:
        def start(cur: Any) -> None:
            if not self._prepared:
                self._ensure_markers(cur)
                if self.spec.create_table:
                    self._create_table(cur, self._schema)
                self._prepared = True
            self.conn.begin()
            cur.execute(f"INSERT INTO `{MARKERS}` (pipeline, sink, query, run, batch_id) VALUES (%s,%s,%s,%s,%s)",
                        self._marker_key(self._batch))

        self._exec(f"cannot start a transaction on {self.server}", start)
        self._open = True
        # after a broken transaction: the rows written so far, again
        self._chunks = [self._insert(rows) for rows in self._chunks]

    def _insert(self, rows: list[tuple]) -> list[tuple]:
        """Insert `rows` in the open transaction; returns the rows kept (the server rejected the others:
        they are added to this batch's dead letters)."""
        import pymysql

        sql = self._sql
        rejected: list[tuple[str, str]] = []  # kept only once the chunk is done (a retried chunk rejects again)

        def insert(cur: Any) -> list[tuple]:
            cur.execute("SAVEPOINT etl_chunk")
            try:
                cur.executemany(sql, rows)
                return rows
            except pymysql.err.MySQLError as e:
                if rejected_code(e) is None:
                    raise
                cur.execute("ROLLBACK TO SAVEPOINT etl_chunk")
            kept = []
            for row in rows:  # the chunk again, row by row: which rows does the server refuse?
                cur.execute("SAVEPOINT etl_row")
                try:
                    cur.execute(sql, row)
                    kept.append(row)
                except pymysql.err.MySQLError as e:
                    code = rejected_code(e)
                    if code is None:
                        raise
                    cur.execute("ROLLBACK TO SAVEPOINT etl_row")
                    rejected.append((f"mysql {code}: {e.args[1] if len(e.args) > 1 else e}", self._payload(row)))
            return kept

        kept = self._exec(f"insert into {self.spec.table} failed", insert)
        for reason, payload in rejected:
            self.rejects.add(reason, payload)
        return kept

    def _payload(self, row: tuple) -> str:
        return json.dumps(dict(zip(self._schema.names, row, strict=True)), default=_json_value, ensure_ascii=False)

    def batch_insert(self, rows: pa.Table) -> None:
        data = list(zip(*[[_clean(v) for v in c.to_pylist()] if pa.types.is_floating(c.type) else c.to_pylist()
                          for c in rows.columns], strict=True))
        if not self._open:
            self._start()
        self._chunks.append(self._insert(data))

    def commit(self, batch_id: int) -> None:
        if not self._open:
            if self.committed(batch_id):
                return  # the commit went through before the connection broke
            self._start()
        n = sum(len(c) for c in self._chunks)
        key = self._marker_key(batch_id)

        def finish(cur: Any) -> None:
            cur.execute(f"UPDATE `{MARKERS}` SET rows_written=%s WHERE pipeline=%s AND sink=%s AND query=%s "
                        "AND run=%s AND batch_id=%s", (n, *key))
            cur.execute(f"DELETE FROM `{MARKERS}` WHERE pipeline=%s AND sink=%s AND query=%s AND run=%s "
                        "AND batch_id < %s", (*key[:4], batch_id - KEEP_MARKERS))
            self.conn.commit()

        self.rejects.flush(batch_id)  # dead letters first: once per batch id, so a replay never doubles them
        try:
            self._exec(f"commit on {self.server} failed", finish)
        except TransientError:
            self._open = False
            raise
        self._open = False
        self._chunks = []

    def abort(self, batch_id: int) -> None:
        self._chunks = []
        self.rejects.clear()
        if self.conn is not None and self._open:
            try:
                self.conn.rollback()
            except Exception:  # noqa: BLE001 - the connection is gone: nothing was committed
                self._drop()
        self._open = False

    def reusable(self) -> bool:
        return not self._open

    def reuse(self, ctx: SinkContext) -> None:
        super().reuse(ctx)  # the connection is kept; `committed` still asks the server (one indexed SELECT)
        self._chunks = []

    def close(self) -> None:
        self._drop()
        self.rejects.close()
