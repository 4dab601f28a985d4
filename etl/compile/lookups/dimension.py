"""Lookup joins: enrich a stream from a dimension table, broadcast or in rocksdict stores.

`lookup_join(events, table, spec)` joins streaming `events` with the dimension
table on `spec.on` (event column -> table column), adding `spec.fields` (all
non-key table columns when absent); a table column whose name the events
already use is added as `<table>_<name>`. Inner: one row per match (a key
present twice in the table gives two rows); left: every event, with NULL
dimension fields when nothing matches. Keys compare as text (integers and
strings; several key columns are joined by \\x1f).

Two stores (`spec.store`, or `auto`: broadcast up to AUTO_MAX_BYTES of file or
AUTO_MAX_ROWS rows):

* broadcast -- Spark's broadcast hash join against the table, read once and
  cached. With `refresh` the table is not cached by Spark: every micro-batch
  re-plans it, and a file is served from each Python worker's in-memory copy,
  re-read once `refresh` has passed and the file changed (a table Spark reads,
  such as mysql, is queried again each micro-batch).
* rocksdb -- a rocksdict store on local disk (etl/compile/lookups/store.py). The
  physical planner picks who serves it (etl.physical.engines): on a local
  master the JVM holds it (`rocksdb-jvm`) (etl/compile/lookups/jvm.py: loaded once, looked
  up in generated code, the driver refreshing it). Otherwise (`rocksdb-python`) `mapInArrow` over
  the events: each Python worker looks keys up a batch at a time (hashed,
  sorted, binary-searched over the chunks it keeps decoded), in Python workers
  of their own (`own_workers`: one pool per table, so that only they read the
  store); with `refresh`, workers re-check the source every interval and swap
  to the new version once built, without stopping the query. Files are read by
  whoever builds the store; tables read on the driver (mysql) are first written
  as parquet snapshots beside the stores.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from etl.compile.context import session_target
from etl.compile.lookups.columns import event_key, spark_type
from etl.compile.lookups.jvm import jvm_lookup
from etl.compile.lookups.store import (TableSource, TableUnreadable, default_base_dir, ensure_version, keep_last_good,
                                       known_bad, log, read_table, recall_good, remember_good, snapshot_dir,
                                       source_version, store_for, table_files)
from etl.compile.workers import own_workers
from etl.physical.engines import rocksdb_jvm_why
from etl.workercache import WorkerCache

LK = "_etl_lk"
AUTO_MAX_BYTES = 16 * 1000**2
AUTO_MAX_ROWS = 1_000_000


class LookupError_(ValueError):
    """A lookup that cannot be compiled (unknown column, bad table)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclass
class Dimension:
    """The dimension table: a file pyarrow can read (csv, jsonl, parquet), or a driver-side reader
    returning a pyarrow Table (mysql through PyMySQL, a static DataFrame's toArrow, ...).

    A reader's table is written as a parquet snapshot beside the stores (and again every
    `refresh`, by a driver thread); workers read the snapshot, so both stores see the same rows."""

    name: str
    path: str | None = None
    format: str = "csv"
    header: bool = True
    delimiter: str = ","
    columns: dict[str, str] | None = None  # declared Spark types, if any
    reader: Any = None  # () -> pyarrow.Table

    @classmethod
    def of_frame(cls, name: str, frame: Any, columns: dict[str, str] | None = None) -> Dimension:
        return cls(name, columns=columns or dict(frame.dtypes), reader=frame.toArrow)


@dataclass
class LookupResult:
    df: Any
    store: str  # "broadcast" | "rocksdb"
    source: TableSource | None = None  # rocksdb: what workers read
    refresher: Refresher | None = None
    renamed: dict[str, str] = field(default_factory=dict)  # table column -> output column
    follow: Any = None  # rocksdb in the JVM: the driver's step publishing a changed table (with refresh)
    engine: str = ""  # broadcast | rocksdb-jvm | rocksdb-python: what was built (etl.physical)

    def prepare(self) -> float:
        """Build the rocksdb store on this host now (the driver, in local mode); returns seconds taken."""
        if self.source is None:
            return 0.0
        t = time.time()
        ensure_version(self.source, source_version(self.source))
        return time.time() - t


# ---------------------------------------------------------------- schema
_SPARK_TO_ARROW = {"string": "string", "bigint": "int64", "long": "int64", "int": "int32", "integer": "int32",
                   "smallint": "int16", "tinyint": "int8", "double": "float64", "float": "float32",
                   "boolean": "bool", "date": "date32", "timestamp": "timestamp_us_utc"}


def arrow_type(spark_type: str) -> Any:
    import pyarrow as pa

    t = _SPARK_TO_ARROW.get(spark_type.lower().strip())
    if t is None:
        if spark_type.lower().startswith("decimal"):
            p, s = spark_type[spark_type.index("(") + 1:-1].split(",")
            return pa.decimal128(int(p), int(s))
        return pa.string()
    if t == "timestamp_us_utc":
        return pa.timestamp("us", tz="UTC")
    return pa.type_for_alias(t)


def _normalize(t: Any) -> Any:
    """Arrow types the Spark side can take as they are (timestamps in UTC micros, others as text)."""
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC")
    if spark_type(t) == "string":
        return pa.string()
    return t


def table_schema(dim: Dimension, keys: list[str]) -> Any:
    """Arrow schema of the table: declared columns, else the DataFrame's, else inferred from the file."""
    import pyarrow as pa

    if dim.columns:
        fields = [pa.field(n, arrow_type(t)) for n, t in dim.columns.items()]
    elif dim.format == "snapshot":
        import pyarrow.parquet as pq

        assert dim.path is not None  # a file or a snapshot: it has one
        fields = list(pq.ParquetDataset(snapshot_dir(TableSource(dim.name, dim.path, "snapshot", (), ()))).schema)
    else:
        fields = _file_fields(dim, keys)
    out = []
    for f in fields:
        out.append(pa.field(f.name, pa.string() if f.name in keys else _normalize(f.type)))
    return pa.schema(out)


def _file_fields(dim: Dimension, keys: list[str]) -> list[Any]:
    """The columns of a file table, read from its (first) file; TableUnreadable when it does not read as one."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    suffixes = {"csv": (".csv", ".txt"), "jsonl": (".json", ".jsonl")}.get(dim.format, ("",))
    assert dim.path is not None  # a file or a snapshot: it has one
    try:
        if dim.format == "parquet" and not os.path.isfile(dim.path):
            return list(pq.ParquetDataset(dim.path).schema)
        files = table_files(dim.path, suffixes)
        if not files:
            raise TableUnreadable(dim.path, "the folder holds no table file")
        first = files[0]
        if os.path.getsize(first) == 0:
            raise TableUnreadable(first, "the file is empty (0 bytes)")
        if dim.format == "csv":
            reader = pcsv.open_csv(first, read_options=pcsv.ReadOptions(autogenerate_column_names=not dim.header),
                                   parse_options=pcsv.ParseOptions(delimiter=dim.delimiter),
                                   convert_options=pcsv.ConvertOptions(column_types={k: pa.string() for k in keys}))
            return list(reader.schema)
        if dim.format == "parquet":
            return list(pq.read_schema(first))
        return list(pjson.read_json(first).schema)
    except (pa.ArrowException, OSError, UnicodeError) as e:
        raise TableUnreadable(dim.path, " ".join(str(e).split())[:300]) from None


# ----------------------------------------------------------------- compile
def choose_store(dim: Dimension, requested: str) -> str:
    if requested != "auto":
        return requested
    assert dim.path is not None  # a file or a snapshot: it has one
    if dim.format == "snapshot":
        import pyarrow.parquet as pq

        rows = sum(f.metadata.num_rows for f in pq.ParquetDataset(
            snapshot_dir(TableSource(dim.name, dim.path, "snapshot", (), ()))).fragments)
        return "broadcast" if rows <= AUTO_MAX_ROWS else "rocksdb"
    p = Path(dim.path)
    size = sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    return "broadcast" if size <= AUTO_MAX_BYTES else "rocksdb"


def lookup_join(events: Any, dim: Dimension, spec: Any, *, spark: Any = None, base_dir: str | None = None,
                store: str | None = None) -> LookupResult:
    """Join per `spec` (a LookupTransform: on, fields, how, store, refresh). `store`: the physical plan's engine
    (broadcast, rocksdb-jvm, rocksdb-python; auto-at-start or None: by `spec.store` and the table's size, the
    rocksdb engine then picked by the planner for this session)."""
    ev_keys, tb_keys = list(spec.on.keys()), list(spec.on.values())
    actual = {c.lower(): c for c in reversed(events.columns)}  # the events' names resolve case-insensitively
    ev_keys = [actual.get(c.lower(), c) for c in ev_keys]
    missing = [c for c in ev_keys if c not in events.columns]
    if missing:
        raise LookupError_(f"lookup key column(s) {', '.join(missing)} missing from the events; columns: "
                           f"{', '.join(events.columns)}", "on")
    base_dir = base_dir or default_base_dir()
    writer = None
    if dim.reader is not None:  # driver-side table: snapshot it, then treat it as a file table
        snap = Path(base_dir) / "_snapshots" / dim.name
        writer = _snapshot_writer(dim.reader, snap)
        writer()
        dim = Dimension(dim.name, str(snap), "snapshot", columns=dim.columns)
    schema = table_schema(dim, tb_keys)
    absent = [c for c in tb_keys + list(spec.fields or []) if c not in schema.names]
    if absent:
        raise LookupError_(f"table '{dim.name}' has no column(s) {', '.join(absent)}; columns: "
                           f"{', '.join(schema.names)}", "fields" if set(absent) - set(tb_keys) else "on")
    values = list(spec.fields) if spec.fields is not None else [c for c in schema.names if c not in tb_keys]
    taken = {c.lower() for c in events.columns}  # as Spark resolves names: case-insensitively (Host and host clash)
    renamed = {c: (f"{dim.name}_{c}" if c.lower() in taken or c == LK else c) for c in values}
    mode = store if store not in (None, "auto-at-start") else choose_store(dim, spec.store)
    if mode == "rocksdb":
        mode = rocksdb_engine(spark or events.sparkSession)
    if mode == "broadcast":
        res = _broadcast(events, dim, spec, schema, ev_keys, tb_keys, values, renamed, spark)
    else:
        res = _rocksdb(events, dim, spec, schema, ev_keys, tb_keys, values, renamed, base_dir,
                       mode == "rocksdb-jvm")
    steps = [s for s in (writer, res.follow) if s is not None]
    res.refresher = Refresher(spec.refresh, _each(steps)) if spec.refresh and steps else None
    return res


def rocksdb_engine(spark: Any) -> str:
    """rocksdb-jvm or rocksdb-python for this session, as the physical planner picks it (etl.physical.engines)."""
    return "rocksdb-python" if rocksdb_jvm_why(session_target(spark)) else "rocksdb-jvm"


def _each(steps: list[Any]) -> Any:
    def run() -> None:
        for step in steps:
            step()

    return run


def _read_static(spark: Any, dim: Dimension, schema: Any, keys: list[str], values: list[str],
                 refresh_s: float | None) -> Any:
    """The table as a static DataFrame; files are read by the same Arrow readers as the rocksdb path
    (through the `etl_dimension` Python data source), so both stores see identical values."""
    import base64
    import pickle

    import pyarrow as pa

    fmt = {"json": "jsonl"}.get(dim.format, dim.format)
    if dim.format == "snapshot":
        refresh_s = refresh_s or 1.0  # a new snapshot is picked up within a second (a stat of LATEST)
    tschema = pa.schema([schema.field(c) for c in keys + values])
    assert dim.path is not None  # a file or a snapshot: it has one
    src = TableSource(dim.name, dim.path, fmt, tuple(keys), tuple(values), tschema, dim.header, dim.delimiter,
                      refresh_s)
    source_cls = _dimension_source()
    spark.dataSource.register(source_cls)
    ddl = ", ".join(f"`{f.name}` {spark_type(f.type)}" for f in tschema)
    return (spark.read.format(source_cls.name()).schema(ddl)
            .option("source", base64.b64encode(pickle.dumps(src)).decode()).load()), src


def _dimension_source() -> Any:
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class DimReader(DataSourceReader):
        def __init__(self, src: TableSource):
            self.src = src

        def read(self, partition: Any) -> Iterator[Any]:
            yield from cached_table(self.src).to_batches(max_chunksize=1 << 16)

    class DimSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "etl_dimension"

        def reader(self, schema: Any) -> Any:
            import base64
            import pickle

            return DimReader(pickle.loads(base64.b64decode(self.options["source"])))

    return DimSource


def _broadcast(events, dim, spec, schema, ev_keys, tb_keys, values, renamed, spark) -> LookupResult:
    from pyspark.sql import functions as F

    spark = spark or events.sparkSession
    table, src = _read_static(spark, dim, schema, tb_keys, values, spec.refresh)
    cols = [F.col(f"`{k}`").cast("string").alias(f"{LK}{i}") for i, k in enumerate(tb_keys)]
    cols += [F.col(f"`{c}`").alias(renamed[c]) for c in values]
    table = table.select(*cols).where(functools.reduce(lambda a, b: a & b,
                                                       [F.col(f"{LK}{i}").isNotNull() for i in range(len(tb_keys))]))
    if not spec.refresh:
        table = table.cache()  # read once
    # with `refresh`, every micro-batch re-plans the table: files come from each worker's copy, re-read when
    # older than `refresh` and changed (cached_table); snapshots when the driver wrote a new one
    cond = [F.col(f"`{k}`").cast("string") == F.col(f"{LK}{i}") for i, k in enumerate(ev_keys)]
    joined = events.join(F.broadcast(table), on=functools.reduce(lambda a, b: a & b, cond),
                         how="inner" if spec.how == "inner" else "left")
    out = joined.drop(*[f"{LK}{i}" for i in range(len(tb_keys))])
    # a file table's refresh, read by the driver too: a bad version is warned about on its console, once
    follow = (lambda: cached_table(src)) if spec.refresh and src.format != "snapshot" else None
    return LookupResult(out, "broadcast", None, None, renamed, follow=follow, engine="broadcast")


# per Python worker: a table key -> (version, when checked, the table); one entry per table of the pipeline
_TABLES: WorkerCache[str, tuple[str, float, Any]] = WorkerCache("dimension tables", None)


def cached_table(src: TableSource) -> Any:
    """The table read by this worker, re-read when `src.refresh_s` passed and its files changed. A new version
    that does not read as a table leaves the last good one answering (this process's, else this host's)."""
    now = time.monotonic()
    hit = _TABLES.get(src.cache_key())
    if hit is not None and (src.refresh_s is None or now - hit[1] < src.refresh_s):
        return hit[2]
    version = source_version(src)
    if hit is not None and (hit[0] == version or known_bad(src, version)):
        table = hit[2]
    else:
        try:
            table = read_table(src)
        except TableUnreadable as e:
            table = hit[2] if hit is not None else recall_good(src) if src.refresh_s is not None else None
            if table is None:
                raise
            keep_last_good(src, version, e)
        else:
            if src.refresh_s is not None and src.format != "snapshot":
                remember_good(src, table)
    _TABLES[src.cache_key()] = (version, now, table)
    return table


def _rocksdb(events, dim, spec, schema, ev_keys, tb_keys, values, renamed, base_dir, jvm: bool = True) -> LookupResult:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    tschema = pa.schema([schema.field(c) for c in tb_keys + values])
    fmt = {"csv": "csv", "jsonl": "jsonl", "json": "jsonl", "parquet": "parquet", "snapshot": "snapshot"}.get(dim.format)
    if fmt is None:
        raise LookupError_(f"a {dim.format} table cannot back a rocksdb lookup", "table")
    src = TableSource(dim.name, dim.path, fmt, tuple(tb_keys), tuple(values), tschema, dim.header,
                      dim.delimiter, spec.refresh, base_dir)

    got = jvm_lookup(events, src, ev_keys, values, renamed, spec.how, spec.refresh is not None, LK) if jvm else None
    if got is not None:
        return LookupResult(got[0], "rocksdb", src, renamed=renamed, follow=got[1], engine="rocksdb-jvm")
    out_ddl = [f"`{n}` {t}" for n, t in events.dtypes]
    out_ddl += [f"`{renamed[c]}` {spark_type(schema.field(c).type)}" for c in values]
    out_schema = StructType.fromDDL(", ".join(out_ddl))
    fn = functools.partial(_lookup_batches, src=src, inner=spec.how == "inner",
                           names=tuple(renamed[c] for c in values))
    with own_workers(events.sparkSession, f"lookup:{dim.name}"):
        df = events.withColumn(LK, event_key(events, ev_keys)).mapInArrow(fn, out_schema)
    return LookupResult(df, "rocksdb", src, None, renamed, engine="rocksdb-python")


def _snapshot_writer(reader: Any, snap: Path) -> Any:
    """Write reader()'s table as snap/v<ns>/part.parquet, then point LATEST at it (atomic rename)."""

    def write() -> None:
        import shutil

        import pyarrow.parquet as pq

        table = reader()
        version = f"v{time.time_ns()}"
        (snap / version).mkdir(parents=True)
        pq.write_table(table, str(snap / version / "part.parquet"))
        tmp = snap / f".LATEST.{os.getpid()}"
        tmp.write_text(version)
        os.replace(tmp, snap / "LATEST")
        old = sorted(p for p in snap.iterdir() if p.is_dir() and p.name.startswith("v") and p.name != version)
        for p in old[:-1]:  # keep the previous snapshot while workers may still read it
            shutil.rmtree(p, ignore_errors=True)

    return write


class Refresher:
    """A driver-side daemon thread running `action` every `interval` seconds until stopped."""

    def __init__(self, interval: float, action: Any):
        self.interval = float(interval)
        self.action = action
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.runs = 0
        self.errors: list[str] = []

    def start(self) -> Refresher:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True, name="etl-lookup-refresh")
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.action()
                self.runs += 1
            except Exception as e:  # noqa: BLE001 - the table stays at its last good version; recorded, warned once
                error = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
                if error not in self.errors:
                    log.warning("lookup table refresh failed (the last good version keeps answering): %s", error)
                    self.errors.append(error)

    def stop(self) -> None:
        self._stop.set()


# ------------------------------------------------------------ executor side
def _lookup_batches(batches: Iterator[Any], *, src: TableSource, inner: bool, names: tuple[str, ...]) -> Iterator[Any]:
    for batch in batches:
        yield join_batch(batch, store_for(src), inner, names)


def join_batch(batch: Any, store: Any, inner: bool, names: tuple[str, ...]) -> Any:
    """Join one Arrow record batch (with its LK key column) against `store`; events keep their order."""
    import pyarrow as pa

    keys = batch.column(batch.schema.get_field_index(LK))
    events = batch.drop_columns([LK])
    ev_rows, dim = store.lookup(keys, keep_unmatched=not inner)
    if inner or len(ev_rows) != batch.num_rows:  # else every event once, in order: the columns as they are
        events = events.take(pa.array(ev_rows))
    cols = list(events.columns) + [c.combine_chunks() for c in dim.columns]
    return pa.RecordBatch.from_arrays(cols, names=list(events.schema.names) + list(names))
