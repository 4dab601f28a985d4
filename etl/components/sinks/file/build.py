"""file sink: files per micro-batch (jsonl, csv or parquet), exactly once.

From the executors (the default, etl/components/sinks/file/hadoop.py): Spark's own writer writes the batch
into its staging folder through the Hadoop FileSystem of `path` (a local path or any Hadoop URI), and the driver
publishes it: `_MANIFEST` (the commit point), a rename per part to `part-<query>-<batch>-<run>-<n>.<ext>`, the
manifest to `_etl_batches/`. A replay finishes a publish a crash cut short and rewrites a batch without a
manifest.

On the driver (`write_arrow`, local paths only: a sink some caller drives itself):
rows are appended to a hidden temporary file (`.part-...tmp`, ignored by Spark
and most readers); commit fsyncs it and renames it atomically to
`part-<query>-<batch id>-<run tag>.<ext>`. That final name is the commit
marker: a replayed batch whose file exists is skipped, so it is never written
twice.

The run tag comes from the query's checkpoint (its stable query id), so a fresh checkpoint never mistakes old
files for its own. jsonl lines are rendered in the JVM (etl/jvm/JsonLines.java, the text of to_json; to_json
for types it does not write), csv rows by Spark's csv writer (on the driver: to_csv), nested values as JSON:
the same formatting as Spark's own writers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar
from collections.abc import Callable

import pyarrow as pa

from etl.components.sinks.file.jsonlines import json_lines
from etl.components.sinks.file.localfs import LocalFiles, local_folder
from etl.components.sinks.file.hadoop import (SPARK_FORMAT, HadoopFiles, Publisher, count_engine, hadoop_call,
                                              hadoop_uri, spark_write)
from etl.runtime.partitions import PartitionResult
from etl.runtime.sink import AbstractSink, SinkContext, TerminalError, WriteResult, run_tag

T = TypeVar("T")

EXT = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet"}


def text_bytes(col: pa.ChunkedArray | pa.Array) -> list[memoryview]:
    """The bytes of every string of `col`, back to back, as views of its Arrow buffers (no copy)."""
    out = []
    for arr in (col.chunks if isinstance(col, pa.ChunkedArray) else [col]):
        if len(arr) == 0 or arr.buffers()[2] is None:
            continue
        width: Literal["q", "i"] = "q" if pa.types.is_large_string(arr.type) else "i"
        off = memoryview(arr.buffers()[1]).cast(width)
        begin, end = off[arr.offset], off[arr.offset + len(arr)]
        out.append(memoryview(arr.buffers()[2])[begin:end])
    return out


def lines_bytes(col: pa.ChunkedArray | pa.Array) -> bytes:
    """Every string of `col` followed by a newline, without a Python object per row."""
    import pyarrow.compute as pc

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if len(arr) == 0:
        return b""
    arr = pc.fill_null(arr, "")
    joined = pc.binary_join_element_wise(arr, pa.scalar("\n"), "").cast(pa.large_string())
    offsets = joined.buffers()[1]
    data = joined.buffers()[2]
    off = memoryview(offsets).cast("q")
    begin, end = off[joined.offset], off[joined.offset + len(joined)]
    return bytes(memoryview(data)[begin:end]) if data is not None else b""


def local_path(path: str) -> str:
    """A local path or `file://` URI as a path; other schemes are refused (TerminalError)."""
    from urllib.parse import unquote, urlparse

    u = urlparse(path)
    if u.scheme == "file":
        return unquote(u.path)
    if len(u.scheme) > 1:
        raise TerminalError(f"file sink path {path!r}: a sink written on the driver writes only local paths and "
                            "file:// URIs")
    return path


class FileSink(AbstractSink):
    shipped = ("_newlines", "_header")

    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self.uri = hadoop_uri(spec.path, ctx.resolve)
        self.format = spec.format
        self._tag: str | None = None
        self._fh: BinaryIO | None = None
        self._pq: Any = None
        self._tmp: Path | None = None
        self._header: list[str] = []
        self._newlines = False  # jsonl values already end with a newline (rendered by JsonLines.java)
        self._publisher: Publisher | None = None
        self._rows = 0
        self._rendered = False  # jsonl rows arrive as a column of lines (json-jvm or to_json), not as columns
        self.count_engine: str | None = None  # the physical plan's `count` engine (set by the runner)
        self._counted: str | None = None  # the count engine the last write ran

    @property
    def dir(self) -> Path:
        """The folder as a local path (the driver's write); a path of another scheme is refused."""
        return Path(local_path(self.uri))

    # names
    @property
    def tag(self) -> str:
        if self._tag is None:
            self._tag = self.ctx.run or run_tag(self.ctx.checkpoint)
        return self._tag

    def final_path(self, batch_id: int) -> Path:
        return self.dir / f"part-{self.ctx.scope}-{batch_id:08d}-{self.tag}.{EXT[self.format]}"

    # the executors' write (Spark's writer) and the driver's publish
    @property
    def publisher(self) -> Publisher:
        """The driver's publish: through Python's file functions on a local folder (no py4j round trip per file
        operation), through the Hadoop FileSystem API on any other URI."""
        if self._publisher is None:
            folder = local_folder(self.uri)
            if folder is not None:
                files: HadoopFiles | LocalFiles = LocalFiles(folder)
            else:
                from pyspark.sql import SparkSession

                files = HadoopFiles(SparkSession.active(), self.uri)
            self._publisher = Publisher(files, self.ctx.scope, self.run_id(), EXT[self.format])
        return self._publisher

    def _io(self, what: str, op: Callable[[], T]) -> T:
        return self._retry(what, lambda: hadoop_call(op), WriteResult())

    def write_frame(self, shaped: Any, batch_id: int, split: bool) -> PartitionResult:
        """The batch written by Spark's writer into its staging folder (leftovers of a crashed attempt removed
        first); with `split`, the stage's failed rows come back from the same pass."""
        pub = self.publisher
        self._io("creation of the staging folder", lambda: pub.prepare(batch_id))
        target = pub.files.uri(pub.staging(batch_id))
        name = f"etl-{self.ctx.sink_id}-{pub.batch_name(batch_id)}"
        count = self._counted = count_engine(shaped.sparkSession, self.count_engine)
        self._rows, failed = self._io("write", lambda: spark_write(shaped, self._spark_format(), target, name,
                                                                    self._lines(), split, count))
        return PartitionResult(rows=self._rows, failed=failed)

    def count_ran(self) -> str | None:
        """The physical plan's `count` engine the last write ran (None: no write yet)."""
        return self._counted

    def json_rendering(self) -> str:
        """The physical plan's `json` engine this sink ran."""
        if not self._rendered:
            return "spark-json"
        return "json-jvm" if self._newlines else "to_json"

    def _spark_format(self) -> str:
        return "text" if self._rendered else SPARK_FORMAT[self.format]

    def _lines(self) -> str | None:
        """jsonl rendered by the JVM: the lines without their newline (Spark's text writer adds it), as SQL."""
        return "substr(value, 1, length(value) - 1) AS value" if self._rendered and self._newlines else None

    def commit_batch(self, batch_id: int) -> None:
        hadoop_call(lambda: self.publisher.commit(batch_id, self._rows))

    def recover(self, batch_id: int) -> bool:
        return self._io("recovery of the publish", lambda: self.publisher.recover(batch_id))

    def is_committed(self, batch_id: int) -> bool:
        """The driver's marker of a batch published from the executors, or the driver's own final file."""
        if AbstractSink.is_committed(self, batch_id):
            return True
        return self.uri.startswith("file:") and self.final_path(batch_id).exists()

    def mark_committed(self, batch_id: int) -> None:
        pass  # the renamed file is the marker

    # shaping in the JVM
    def prepare_columns(self, df: Any) -> list[Any] | None:
        from pyspark.sql import functions as F

        if self.format == "jsonl":
            if self.on_executors and getattr(self, "json_engine", None) in (None, "spark-json"):
                return None  # Spark's json writer renders the rows
            self._rendered = True

            col, self._newlines = json_lines(df, getattr(self, "json_engine", None))  # set by the runner
            return [col.alias("value")]
        if self.format == "csv":
            self._header = list(df.columns)
            flat = [F.to_json(F.col(f"`{f.name}`")).alias(f.name) if f.dataType.typeName() in ("array", "map", "struct")
                    else F.col(f"`{f.name}`") for f in df.schema.fields]
            return flat if self.on_executors else [F.to_csv(F.struct(*flat)).alias("value")]
        return None

    # one batch
    def begin(self, batch_id: int, schema: pa.Schema) -> None:
        final = self.final_path(batch_id)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TerminalError(f"cannot create {final.parent}: {e.strerror or e}") from e
        self._tmp = final.with_name(f".{final.name}.tmp")
        self._clean_stale(self._tmp)
        if self.format == "parquet":
            import pyarrow.parquet as pq

            self._pq = pq.ParquetWriter(str(self._tmp), schema, compression="zstd")
        else:
            self._fh = open(self._tmp, "wb")  # noqa: SIM115 - open across batches, closed by commit or abort
            if self.format == "csv":
                self._fh.write((",".join(_csv_quote(h) for h in self._header) + "\n").encode())

    def batch_insert(self, rows: pa.Table) -> None:
        if self._pq is not None:
            self._pq.write_table(rows)
        else:
            assert self._fh is not None
            if self._newlines:
                for part in text_bytes(rows.column(0)):
                    self._fh.write(part)
            else:
                self._fh.write(lines_bytes(rows.column(0)))

    def commit(self, batch_id: int) -> None:
        assert self._tmp is not None
        if self._pq is not None:
            self._pq.close()
            self._pq = None
        elif self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
        final = self.final_path(batch_id)
        os.replace(self._tmp, final)
        _fsync_dir(final.parent)
        self._tmp = None

    def _clean_stale(self, current: Path) -> None:
        """Temporary files left by a crashed run of this query (one writer per checkpoint)."""
        if getattr(self, "_cleaned", False):
            return
        self._cleaned = True
        for old in self.dir.glob(f".part-{self.ctx.scope}-*.tmp"):
            if old != current:
                old.unlink(missing_ok=True)

    def abort(self, batch_id: int) -> None:
        for closer in (self._pq, self._fh):
            try:
                if closer is not None:
                    closer.close()
            except Exception:  # noqa: BLE001 - best effort while failing
                pass
        self._pq = self._fh = None
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None


def _csv_quote(s: str) -> str:
    return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\n\r') else s


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
