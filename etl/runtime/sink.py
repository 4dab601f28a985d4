"""AbstractSink: one batching, retrying, idempotent write path shared by every sink.

A sink implements `batch_insert(rows)` (rows: a pyarrow.Table of at most
`batch_size` rows) and, when it has something to finalize, `begin`/`commit`.
The base class, driven by foreachBatch:

* on the executors (etl/runtime/partitions.py, the default): one instance per partition of the micro-batch,
  on the executor that computed it, writes it as below with its own marker (scope `<query>.p<partition>`);
  the driver only gets a result row per partition, then commits the batch (`commit_batch`) and marks it
  (`write_frame` is that job: the file sink's runs Spark's file writer instead);
* skips a micro-batch already committed for (pipeline, sink, scope, batch id):
  a replayed batch never writes twice (`is_committed` / `mark_committed`;
  a file sink written on the driver overrides them with its final file names);
* streams the batch's rows from the JVM as Arrow record batches, buffers them
  and writes chunks of at most `batch_size` rows, flushing by size, by
  `flush_interval` and when the buffer exceeds `max_buffer` bytes;
* retries `TransientError` with exponential backoff (`retry`), and fails the
  query with a clear message on `TerminalError` or when retries run out.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa

from etl.dead_letters import ERR, PAYLOAD
from etl.runtime import turns
from etl.runtime.arrow import arrow_batches, arrow_schema
from etl.runtime.partitions import run_partitions, write_path

log = logging.getLogger("etl.sink")
T = TypeVar("T")
KEEP_MARKERS = 16


class TransientError(Exception):
    """A write that may succeed when tried again (timeout, connection reset, lock wait)."""


class TerminalError(Exception):
    """A write that will never succeed (bad credentials, missing table, rejected schema)."""


class SinkFailed(RuntimeError):
    """Raised out of foreachBatch: the query stops with this message. `sink_id` and `cause` (the message
    without the sink's label) let `etl run` point at the sink; `unreachable`: retries ran out (E407)."""

    def __init__(self, message: str, sink_id: str | None = None, cause: str | None = None,
                 unreachable: bool = False):
        super().__init__(message)
        self.sink_id = sink_id
        self.cause = cause
        self.unreachable = unreachable


@dataclass
class SinkContext:
    pipeline: str
    sink_id: str
    scope: str  # the query writing through this sink (batch ids are per query)
    state_dir: str  # where commit markers live (inside the pipeline checkpoint)
    base_dir: str = "."  # folder of the pipeline file: relative paths start here
    echo: Callable[[str], None] | None = None  # where print sinks write (the progress view's console)
    checkpoint: str | None = None  # checkpoint folder of the query writing through this sink
    sleep: Callable[[float], None] = turns.pause  # (etl serve: a retry's backoff gives the batch's turn back)
    where: str | None = None  # position of the sink in the pipeline file (file:line:col), for messages
    dead_letter: Any = None  # spec of the pipeline's dead-letter sink (for rows a sink rejects)
    executors: bool = True  # write_batch: each partition written on its executor (etl/runtime/partitions.py)
    partition: int | None = None  # set on an executor: the partition this instance writes
    run: str | None = None  # the checkpoint's run tag, read on the driver (executors may not see the checkpoint)

    def resolve(self, path: str) -> str:
        p = Path(path)
        return str(p if p.is_absolute() else (Path(self.base_dir) / p).resolve())


@dataclass
class WriteResult:
    rows: int = 0
    chunks: int = 0
    retries: int = 0
    skipped: bool = False  # batch already committed: replay ignored
    seconds: float = 0.0


@dataclass
class _Buffer:
    batch_size: int
    max_bytes: int
    interval: float
    parts: list[pa.RecordBatch] = field(default_factory=list)
    rows: int = 0
    nbytes: int = 0
    last_flush: float = field(default_factory=time.monotonic)

    def add(self, rb: pa.RecordBatch) -> None:
        if rb.num_rows:
            self.parts.append(rb)
            self.rows += rb.num_rows
            self.nbytes += rb.nbytes

    def due(self) -> bool:
        return self.nbytes >= self.max_bytes or (self.rows > 0 and time.monotonic() - self.last_flush >= self.interval)

    def take(self, everything: bool) -> Iterator[pa.Table]:
        """Chunks of exactly batch_size rows (and the remainder when `everything`)."""
        if not self.parts:
            return
        table = pa.Table.from_batches(self.parts)
        n = table.num_rows
        full = n if everything else n - n % self.batch_size
        for start in range(0, full, self.batch_size):
            yield table.slice(start, min(self.batch_size, full - start))
        rest = table.slice(full)
        self.parts = rest.to_batches() if rest.num_rows else []
        self.rows = rest.num_rows
        self.nbytes = rest.nbytes if rest.num_rows else 0
        if everything or full:
            self.last_flush = time.monotonic()


class AbstractSink:
    """Base of every sink; subclasses implement `batch_insert` (and `begin`/`commit` to finalize)."""

    shipped: ClassVar[tuple[str, ...]] = ()  # attributes `prepare` sets on the driver that partitions need
    live: ClassVar[bool] = False  # a worker keeps the instance for its partition's next batch (etl.runtime.partitions)
    cancelled = False  # the driver's instance: a stop cancelled its batch in flight (the runner's _cancel)

    def __init__(self, spec: Any, ctx: SinkContext):
        self.spec = spec
        self.ctx = ctx

    # ---------------------------------------------------------------- hooks
    def prepare_columns(self, df: Any) -> list[Any] | None:
        """Columns computed in the JVM before rows travel to Python (e.g. to_json); None: as they are."""
        return None

    def prepare(self, df: Any) -> Any:
        """Shape the batch in the JVM. Prefer overriding `prepare_columns`: it lets a sink take the
        good rows of a failing stage and its dead letters from one pass (see `write_split`)."""
        cols = self.prepare_columns(df)
        return df if cols is None else df.select(*cols)

    @property
    def can_split(self) -> bool:
        return type(self).prepare is AbstractSink.prepare

    def begin(self, batch_id: int, schema: pa.Schema) -> None:
        """Open whatever one batch is written into (a temporary file, a transaction)."""

    def batch_insert(self, rows: pa.Table) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def commit(self, batch_id: int) -> None:
        """Make the batch visible atomically (rename, transaction commit)."""

    def abort(self, batch_id: int) -> None:
        """Throw away a half-written batch."""

    def close(self) -> None:
        """Release connections at the end of the run."""

    def reusable(self) -> bool:
        """A `live` sink after a partition written without error: may it write the partition's next batch?"""
        return True

    def reuse(self, ctx: SinkContext) -> None:
        """A kept `live` instance about to write its partition's next batch: forget that batch's leftovers."""
        self.ctx = ctx

    def commit_batch(self, batch_id: int) -> None:
        """On the driver, once every partition of the batch is written (the file sink publishes its parts)."""

    def recover(self, batch_id: int) -> bool:
        """On the driver before a batch is written: finish a commit a crash interrupted; True: it is done."""
        return False

    def run_id(self) -> str:
        if self.ctx.run is None:
            self.ctx.run = run_tag(self.ctx.checkpoint)
        return self.ctx.run

    @property
    def on_executors(self) -> bool:
        return self.ctx.executors and self.ctx.partition is None and write_path(self.spec.type)[0] != "driver"

    @property
    def write_engine(self) -> str:
        """The physical plan's `write` engine this sink runs (etl.physical)."""
        return write_path(self.spec.type)[0] if self.on_executors else "driver"

    # ------------------------------------------------------- idempotency
    @property
    def label(self) -> str:
        return f"sink '{self.ctx.sink_id}'" + (f" ({self.ctx.where})" if self.ctx.where else "")

    def _marker(self, batch_id: int) -> Path:
        return Path(self.ctx.state_dir) / "sinks" / self.ctx.sink_id / self.ctx.scope / f"{batch_id}.committed"

    def is_committed(self, batch_id: int) -> bool:
        return self._marker(batch_id).exists()

    def mark_committed(self, batch_id: int) -> None:
        m = self._marker(batch_id)
        m.parent.mkdir(parents=True, exist_ok=True)
        tmp = m.with_suffix(".tmp")
        tmp.write_text(f"{self.ctx.pipeline} {self.ctx.sink_id} {self.ctx.scope} {batch_id}\n")
        os.replace(tmp, m)
        for old in m.parent.glob("*.committed"):
            try:
                if int(old.stem) < batch_id - KEEP_MARKERS:
                    old.unlink()
            except (ValueError, OSError):
                pass

    # ---------------------------------------------------------- retries
    def _retry(self, what: str, op: Callable[[], T], result: WriteResult) -> T:
        r = self.spec.retry
        delay = float(r.initial_backoff)
        attempt = 1
        while True:
            try:
                return op()
            except TransientError as e:
                if self.cancelled:  # the stop's cancellation and interruption of its query: no I/O fault to retry
                    raise
                if attempt >= r.max_attempts:
                    cause = f"{what} failed after {attempt} attempts (retry.max_attempts={r.max_attempts}): {e}"
                    raise SinkFailed(f"{self.label}: {cause}", self.ctx.sink_id, cause, unreachable=True) from e
                log.warning("%s: %s failed (attempt %d/%d), retrying in %.2fs: %s",
                            self.label, what, attempt, r.max_attempts, delay, e)
                self.ctx.sleep(delay)
                delay = min(delay * 2, float(r.max_backoff))
                attempt += 1
                result.retries += 1
            except TerminalError as e:
                cause = f"{what} failed: {e} (terminal error, not retried)"
                raise SinkFailed(f"{self.label}: {cause}", self.ctx.sink_id, cause) from e

    # -------------------------------------------------------- the write
    def write_arrow(self, batches: Iterable[pa.RecordBatch], batch_id: int, schema: pa.Schema) -> WriteResult:
        """Write one micro-batch given as Arrow record batches; exactly once per batch id."""
        t0 = time.monotonic()
        result = WriteResult()
        if self.is_committed(batch_id):
            result.skipped = True
            return result
        buf = _Buffer(self.spec.batch_size, int(self.spec.max_buffer), float(self.spec.flush_interval))
        started = False

        def flush(everything: bool) -> None:
            nonlocal started
            for chunk in buf.take(everything):
                if not started:
                    self._retry("begin", lambda: self.begin(batch_id, schema), result)
                    started = True
                self._retry(f"write of {chunk.num_rows} rows", functools.partial(self.batch_insert, chunk), result)
                result.rows += chunk.num_rows
                result.chunks += 1

        try:
            for rb in batches:
                buf.add(rb)
                if buf.rows >= buf.batch_size:
                    flush(False)
                if buf.due():
                    flush(True)
            flush(True)
            if started:
                self._retry("commit", lambda: self.commit(batch_id), result)
                self.mark_committed(batch_id)
        except BaseException:
            if started:
                try:
                    self.abort(batch_id)
                except Exception:  # noqa: BLE001 - keep the original error
                    log.exception("%s: abort of batch %d failed", self.label, batch_id)
            raise
        result.seconds = time.monotonic() - t0
        return result

    def write_split(self, df: Any, batch_id: int) -> tuple[WriteResult, pa.Table | None]:
        """Write the good rows (ERR is NULL) of a stage's shared frame and return its failed rows
        (columns ERR, PAYLOAD), reading the data once: the stage's regex or parser runs once."""
        from pyspark.sql import functions as F

        if self.on_executors:
            columns = df.columns
            data = [c for c in columns if c not in (ERR, PAYLOAD)]
            cols = self.prepare_columns(df.drop(ERR, PAYLOAD))
            if cols is None and columns == [*data, ERR, PAYLOAD]:
                shaped = df  # the rows as they are (no projection: fewer py4j round trips per batch)
            else:
                shaped = df.select(*(cols or [F.col(f"`{c}`") for c in data]), F.col(ERR), F.col(PAYLOAD))
            res, failed = self._write_partitions(shaped, batch_id, split=True)
            if not failed:
                return res, None
            return res, pa.table({ERR: pa.array([e for e, _ in failed], pa.string()),
                                  PAYLOAD: pa.array([p for _, p in failed], pa.string())})
        if self.is_committed(batch_id):  # a replay: only its failed rows are still needed
            failed = df.where(F.col(ERR).isNotNull()).select(ERR, PAYLOAD)
            parts = [rb for rb in arrow_batches(failed) if rb.num_rows]
            return WriteResult(skipped=True), (pa.Table.from_batches(parts) if parts else None)
        data = [c for c in df.columns if c not in (ERR, PAYLOAD)]
        cols = self.prepare_columns(df.select(*[F.col(f"`{c}`") for c in data]))
        shaped = df.select(*(cols or [F.col(f"`{c}`") for c in data]), F.col(ERR), F.col(PAYLOAD))
        schema = arrow_schema(shaped)
        good_schema = pa.schema([f for f in schema if f.name not in (ERR, PAYLOAD)])
        dead: list[pa.RecordBatch] = []

        def good_rows() -> Iterator[pa.RecordBatch]:
            import pyarrow.compute as pc

            for rb in arrow_batches(shaped):
                err = rb.column(rb.schema.get_field_index(ERR))
                if err.null_count == rb.num_rows:
                    yield rb.drop_columns([ERR, PAYLOAD])
                    continue
                ok = pc.is_null(err)
                dead.append(rb.filter(pc.invert(ok)).select([ERR, PAYLOAD]))
                yield rb.filter(ok).drop_columns([ERR, PAYLOAD])

        result = self.write_arrow(good_rows(), batch_id, good_schema)
        return result, (pa.Table.from_batches(dead) if dead else None)

    def write_batch(self, df: Any, batch_id: int) -> WriteResult:
        """foreachBatch entry point: shape in the JVM, write each partition on its executor (or stream the rows
        to the driver over Arrow and write them there)."""
        if self.on_executors:
            return self._write_partitions(self.prepare(df), batch_id, split=False)[0]
        if self.is_committed(batch_id):
            return WriteResult(skipped=True)
        shaped = self.prepare(df)
        return self.write_arrow(arrow_batches(shaped), batch_id, arrow_schema(shaped))

    def _write_partitions(self, shaped: Any, batch_id: int, split: bool) -> tuple[WriteResult, list]:
        """Every partition written on its executor, then the batch committed on the driver; exactly once per
        (pipeline, sink, query, batch, partition). Returns the result and the failed rows of a split frame."""
        t0 = time.monotonic()
        batch_done = AbstractSink.is_committed(self, batch_id) or self.recover(batch_id)
        if batch_done and not split:
            AbstractSink.mark_committed(self, batch_id)
            return WriteResult(skipped=True), []
        if batch_done:  # a replay: only the stage's failed rows are still needed (dead letters skip a written batch)
            from pyspark.sql import functions as F

            failed = shaped.where(F.col(ERR).isNotNull()).select(F.col(ERR).cast("string"), PAYLOAD).collect()
            return WriteResult(skipped=True), [(r[0], r[1]) for r in failed]
        try:
            res = self.write_frame(shaped, batch_id, split)
        except Exception as e:
            raise self._partition_failure(e) from e
        if res.rejected and hasattr(self, "rejects"):
            self.rejects.rows = list(res.rejected)
            self.rejects.flush(batch_id)
        self._retry("commit", lambda: self.commit_batch(batch_id), WriteResult())
        AbstractSink.mark_committed(self, batch_id)
        out = WriteResult(rows=res.rows, chunks=res.chunks, retries=res.retries, seconds=time.monotonic() - t0)
        return out, res.failed

    def write_frame(self, shaped: Any, batch_id: int, split: bool) -> Any:
        """The executors' write of a batch not committed yet (a PartitionResult); the driver commits it next."""
        return run_partitions(self, shaped, batch_id, split)

    def _partition_failure(self, e: Exception) -> Exception:
        """A partition's SinkFailed comes back inside Spark's job failure: the same SinkFailed on the driver."""
        msg = str(e)
        if "SinkFailed: " not in msg:
            return e
        line = msg.split("SinkFailed: ", 1)[1].splitlines()[0]
        cause = line[len(self.label) + 2:] if line.startswith(self.label + ": ") else line
        return SinkFailed(line, self.ctx.sink_id, cause, unreachable="(retry.max_attempts=" in cause)


def run_tag(checkpoint: str | None) -> str:
    """A short id stable for one checkpoint (Spark's query id), '0' without one."""
    if not checkpoint:
        return "0"
    try:
        with open(os.path.join(checkpoint, "metadata")) as fh:
            return json.loads(fh.readline())["id"].split("-")[0]
    except (OSError, ValueError, KeyError):
        return "0"
