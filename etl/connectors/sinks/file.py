"""file sink: one file per micro-batch and partition (jsonl, csv or parquet), exactly once.

On the executors (etl/runtime/partitions.py), each partition writes its part as below, but under the batch's
staging folder `<path>/_staging/<query>-<batch>-<run>/part-<partition>.<ext>` (the staged part is the
partition's commit); the driver publishes the batch (`commit_batch`): `_MANIFEST` first, then a rename per
part to `part-<query>-<batch>-<run>-<partition>.<ext>`. `path` is a local path or a `file://` URI.
Written on the driver (`write_arrow`):

Rows are appended to a hidden temporary file (`.part-...tmp`, ignored by Spark
and most readers); commit fsyncs it and renames it atomically to
`part-<query>-<batch id>-<run tag>.<ext>`. That final name is the commit
marker: a replayed batch whose file exists is skipped, so it is never written
twice. The run tag comes from the query's checkpoint (its stable query id), so
a fresh checkpoint never mistakes old files for its own.

jsonl and csv lines are rendered in the JVM (jsonl: etl/jvm/JsonLines.java,
the text of to_json plus a newline, written as it arrives; to_json for types it
does not write; csv: to_csv): the same formatting as Spark's own writers;
parquet rows arrive as Arrow columns.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa

from etl.runtime.sink import AbstractSink, SinkContext, TerminalError, run_tag

EXT = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet"}


def text_bytes(col: pa.ChunkedArray | pa.Array) -> list[memoryview]:
    """The bytes of every string of `col`, back to back, as views of its Arrow buffers (no copy)."""
    out = []
    for arr in (col.chunks if isinstance(col, pa.ChunkedArray) else [col]):
        if len(arr) == 0 or arr.buffers()[2] is None:
            continue
        width = "q" if pa.types.is_large_string(arr.type) else "i"
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
        raise TerminalError(f"file sink path {path!r}: only local paths and file:// URIs are written; mount the "
                            "shared storage (NFS, a FUSE mount of HDFS or S3) on every machine")
    return path


class FileSink(AbstractSink):
    shipped = ("_newlines", "_header")

    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self.dir = Path(ctx.resolve(local_path(spec.path)))
        self.format = spec.format
        self._tag: str | None = None
        self._fh: BinaryIO | None = None
        self._pq: Any = None
        self._tmp: Path | None = None
        self._header: list[str] = []
        self._newlines = False  # jsonl values already end with a newline (rendered by JsonLines.java)

    # names
    @property
    def tag(self) -> str:
        if self._tag is None:
            self._tag = self.ctx.run or run_tag(self.ctx.checkpoint)
        return self._tag

    def final_path(self, batch_id: int) -> Path:
        if self.ctx.partition is not None:  # on an executor: the partition's part, staged until the batch commits
            return self.staging(batch_id) / f"part-{self.ctx.partition:05d}.{EXT[self.format]}"
        return self.dir / f"part-{self.ctx.scope}-{batch_id:08d}-{self.tag}.{EXT[self.format]}"

    def staging(self, batch_id: int) -> Path:
        """Where the partitions of a batch written from the executors wait for the driver's commit."""
        query = self.ctx.scope.rsplit(".p", 1)[0] if self.ctx.partition is not None else self.ctx.scope
        return self.dir / "_staging" / f"{query}-{batch_id:08d}-{self.tag}"

    # the driver's commit of a batch written from the executors
    def commit_batch(self, batch_id: int) -> None:
        """Publish the batch's staged parts: the list of parts is written first (the commit point), then each
        part is renamed to its final name; a crash in between is finished by `recover` before the replay."""
        stage = self.staging(batch_id)
        parts = sorted(p.name for p in stage.glob("part-*")) if stage.is_dir() else []
        if not parts:
            return
        tmp = stage / ".MANIFEST.tmp"
        tmp.write_text("\n".join(parts) + "\n")
        os.replace(tmp, stage / "_MANIFEST")
        _fsync_dir(stage)
        self._publish(batch_id)

    def recover(self, batch_id: int) -> bool:
        stage = self.staging(batch_id)
        if (stage / "_MANIFEST").exists():
            self._publish(batch_id)
            return True
        if stage.is_dir():  # a replay: the parts of partitions that finished are kept, the rest is thrown away
            for old in stage.glob(".*.tmp"):
                old.unlink(missing_ok=True)
        return False

    def _publish(self, batch_id: int) -> None:
        import shutil

        stage = self.staging(batch_id)
        ext = EXT[self.format]
        for name in (stage / "_MANIFEST").read_text().split():
            src = stage / name
            part = name[len("part-"):-len(ext) - 1]
            if src.exists():
                os.replace(src, self.dir / f"part-{self.ctx.scope}-{batch_id:08d}-{self.tag}-{part}.{ext}")
        _fsync_dir(self.dir)
        shutil.rmtree(stage, ignore_errors=True)
        try:
            stage.parent.rmdir()  # _staging, when no other batch waits there
        except OSError:
            pass

    def is_committed(self, batch_id: int) -> bool:
        return self.final_path(batch_id).exists()

    def mark_committed(self, batch_id: int) -> None:
        pass  # the renamed file is the marker

    # shaping in the JVM
    def prepare_columns(self, df: Any) -> list[Any] | None:
        from pyspark.sql import functions as F

        if self.format == "jsonl":
            from etl.connectors.sinks._jsonlines import json_lines

            col, self._newlines = json_lines(df, getattr(self, "json_engine", None))  # set by the runner
            return [col.alias("value")]
        if self.format == "csv":
            self._header = list(df.columns)
            flat = [F.to_json(F.col(f"`{f.name}`")).alias(f.name) if f.dataType.typeName() in ("array", "map", "struct")
                    else F.col(f"`{f.name}`") for f in df.schema.fields]
            return [F.to_csv(F.struct(*flat)).alias("value")]
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
            self._fh = open(self._tmp, "wb")
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
        if self.ctx.partition is not None:
            return  # a partition's only temporary file is `current` (truncated when opened)
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
