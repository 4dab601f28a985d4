"""Sinks on the executors: each partition of a micro-batch is written by its own sink instance.

The driver's `write_batch` runs one Spark job over the batch (`mapInArrow`): on the executor that computed a
partition, a sink instance (scope `<query>.p<partition>`) writes the partition's Arrow
batches through `AbstractSink.write_arrow` -- batching, flushing, retries and its own exactly-once marker
(MySQL and Kafka: marker in the partition's transaction; Elasticsearch, RocketMQ: deterministic ids and a
marker in the checkpoint). Only one small row per partition comes back to the driver
(rows written, chunks, retries, skipped), plus the rows that must go to dead letters (rows a stage failed on,
rows the server refused). The driver then commits the batch (`commit_batch`) and writes its batch marker; a replayed batch whose marker exists is skipped whole, and one
without it is run again: partitions that committed skip, the others write.

The file sink writes with Spark's own writer instead (`write_frame`, etl/components/sinks/file/hadoop.py): its
batch is staged by Spark's tasks and published by `commit_batch`.

`write_path(sink_type)` is the one decision of where a sink writes (etl/physical records it).

Sinks live across micro-batches (issue 42): a sink class with `live` set is kept by the Python worker that wrote a
partition (`LIVE`, by the partition's whole identity: sink class, spec, pipeline, sink, query and partition, run,
checkpoint), so the next batch of that partition on that worker reuses its clients (a Kafka producer with its
transactions initialised, a MySQL connection) and what it knows it committed, instead of building them per
partition per batch (one left waiting more than LIVE_IDLE seconds is closed). An instance is taken out while it writes (`checkout`: never two tasks on one) and put back
only after a write that raised nothing and left nothing open (`checkin`, `reusable`); on any error it is closed
and the next batch builds a new one, which recovers its committed state from the server as on a first batch. A
worker that dies loses its instances the same way. Whether a kept instance's knowledge can be trusted is the
sink's to say: the Kafka sink's is bounded by its producer's epoch (etl/components/sinks/kafka/build.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from typing import Any
from collections.abc import Iterator

import pyarrow as pa

from etl import registry, settings
from etl.dead_letters import ERR, PAYLOAD
from etl.runtime.arrow import arrow_schema
from etl.workercache import WorkerCache

log = logging.getLogger("etl.sink")
# sinks whose instances write from the executors; the others write on the driver (with the reason)
RESULT_DDL = ("kind string, part int, rows long, chunks long, retries long, skipped boolean, "
              "err string, payload string")
RESULT_SCHEMA = pa.schema([("kind", pa.string()), ("part", pa.int32()), ("rows", pa.int64()),
                          ("chunks", pa.int64()), ("retries", pa.int64()), ("skipped", pa.bool_()),
                          ("err", pa.string()), ("payload", pa.string())])


LIVE_KEEP = 64  # live sink instances a worker keeps (the oldest is closed first)
LIVE_IDLE = 120.0  # seconds a kept instance may wait for its next batch (a finished run's are closed after it)


def _close_live(kept: tuple[float, Any]) -> None:
    kept[1].close()


# a worker's sink instances between micro-batches, by live_key: (when it was put back, the sink)
LIVE: WorkerCache[tuple, tuple[float, Any]] = WorkerCache("live sinks", LIVE_KEEP, close=_close_live)


def live_key(cls: type, spec: Any, ctx: Any) -> tuple:
    """Everything that makes a partition's sink another one: a change of any part builds a new instance."""
    dump = spec.model_dump_json() if hasattr(spec, "model_dump_json") else repr(spec)
    return (cls.__module__, cls.__qualname__, hashlib.sha256(dump.encode()).hexdigest(), ctx.pipeline, ctx.sink_id,
            ctx.scope, ctx.partition, ctx.run, ctx.state_dir, ctx.base_dir, ctx.checkpoint)


def checkout(cls: type, spec: Any, ctx: Any) -> tuple[Any, tuple | None]:
    """The sink instance that writes a partition: the one this worker kept for it (`reuse`d) or a new one; the
    key to give it back under (None: the class is not kept between batches)."""
    if not getattr(cls, "live", False):
        return cls(spec, ctx), None
    key = live_key(cls, spec, ctx)
    now = time.monotonic()
    for old in LIVE:  # the sinks of a run that ended (or of a partition gone elsewhere) are not kept for ever
        got = LIVE.get(old)
        if got is not None and now - got[0] > LIVE_IDLE and LIVE.pop(old) is got:
            _close_live(got)
    kept = LIVE.pop(key)
    if kept is None:
        return cls(spec, ctx), key
    kept[1].reuse(ctx)
    return kept[1], key


def checkin(sink: Any, key: tuple | None, ok: bool) -> None:
    """After a partition's write: kept for the next batch when it raised nothing and the sink says it can go on,
    closed otherwise (the next batch builds a new one and recovers what was committed from the server)."""
    if key is not None and ok and sink.reusable():
        LIVE[key] = (time.monotonic(), sink)
    else:
        sink.close()


def write_path(sink_type: str) -> tuple[str, str]:
    """("spark-writer" | "executors" | "driver", why) for a sink type."""
    spec = registry.lookup("sink", sink_type).spec
    why = getattr(spec, "DRIVER_ONLY", None)
    if why:
        return "driver", why
    if (how := getattr(spec, "SPARK_WRITER", None)):
        return "spark-writer", how
    return "executors", "each partition is written by its own sink instance on its executor"


def partition_scope(scope: str, part: int) -> str:
    return f"{scope}.p{part}"


@dataclass
class PartitionResult:
    rows: int = 0
    chunks: int = 0
    retries: int = 0
    partitions: int = 0
    skipped: int = 0  # partitions committed by an earlier attempt
    failed: list[tuple[str | None, str | None]] = dataclasses.field(default_factory=list)  # (ERR, PAYLOAD)
    rejected: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (reason, payload)


@dataclass
class PartitionWriter:
    """What an executor needs to write one partition (pickled into the task)."""

    cls: type
    spec: Any
    ctx: Any  # SinkContext, without the driver's console
    batch_id: int
    schema: pa.Schema
    split: bool  # the frame carries ERR / PAYLOAD (a stage's failed rows go to dead letters)
    state: dict  # the driver instance's `shipped` attributes (set by `prepare`)
    pause: str | None = None  # tests: ETL_TEST_PARTITION_PAUSE of the driver's settings (see `_pause`)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        part = TaskContext.get().partitionId()  # type: ignore[union-attr]  # None on the driver only
        sink, key = checkout(self.cls, self.spec, dataclasses.replace(
            self.ctx, scope=partition_scope(self.ctx.scope, part), partition=part))
        sink.__dict__.update(self.state)
        ok = False
        failed: list[pa.RecordBatch] = []
        relay = _Relay()
        logger = logging.getLogger("etl.sink")
        logger.addHandler(relay)
        # this Python worker is reused by other tasks: whatever another library set up in it (a dictConfig that
        # disables existing loggers, a level) must not silence the sink's warnings on their way to the driver
        was = (logger.disabled, logger.level, logging.root.manager.disable)
        logger.disabled = False
        if logger.getEffectiveLevel() > logging.WARNING:
            logger.setLevel(logging.WARNING)
        if was[2] >= logging.WARNING:
            logging.disable(logging.NOTSET)
        try:
            if self.split:
                batches = _good_rows(batches, failed)
            batches = _cast(batches, self.schema)
            if sink.is_committed(self.batch_id):  # an earlier attempt committed this partition
                for _ in batches:  # its failed rows are still wanted (dead letters skip a committed batch)
                    pass
                res = None
            else:
                res = sink.write_arrow(batches, self.batch_id, self.schema)
            rejected = list(getattr(getattr(sink, "rejects", None), "rows", []) or [])
            ok = True
        finally:
            checkin(sink, key, ok)
            logger.removeHandler(relay)
            logger.disabled = was[0]
            logger.setLevel(was[1])
            logging.disable(was[2])
        if self.pause:
            _pause(self.pause, part)
        yield pa.record_batch([pa.array(["part"]), pa.array([part], pa.int32()),
                               pa.array([res.rows if res else 0], pa.int64()),
                               pa.array([res.chunks if res else 0], pa.int64()),
                               pa.array([res.retries if res else 0], pa.int64()),
                               pa.array([res is None]), pa.array([None], pa.string()),
                               pa.array([None], pa.string())], schema=RESULT_SCHEMA)
        rows = [(("failed", e, p)) for rb in failed for e, p in zip(rb.column(0).to_pylist(), rb.column(1).to_pylist(), strict=True)]
        rows += [("rejected", r, p) for r, p in rejected]
        rows += [("log", str(level), msg) for level, msg in relay.lines]
        if rows:
            n = len(rows)
            yield pa.record_batch([pa.array([k for k, _, _ in rows]), pa.array([part] * n, pa.int32()),
                                   pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()),
                                   pa.nulls(n, pa.bool_()), pa.array([e for _, e, _ in rows], pa.string()),
                                   pa.array([p for _, _, p in rows], pa.string())], schema=RESULT_SCHEMA)


class _Relay(logging.Handler):
    """An executor's sink warnings (retries), sent to the driver with the partition's result and logged there."""

    def __init__(self, keep: int = 50) -> None:
        super().__init__(logging.WARNING)
        self.keep = keep
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < self.keep:
            self.lines.append((record.levelno, record.getMessage()))


def _good_rows(batches: Iterator[pa.RecordBatch], failed: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import pyarrow.compute as pc

    for rb in batches:
        err = rb.column(rb.schema.get_field_index(ERR))
        if err.null_count == rb.num_rows:
            yield rb.drop_columns([ERR, PAYLOAD])
            continue
        ok = pc.is_null(err)
        bad = rb.filter(pc.invert(ok)).select([ERR, PAYLOAD])
        failed.append(pa.record_batch([bad.column(0).cast(pa.string()), bad.column(1).cast(pa.string())],
                                      names=[ERR, PAYLOAD]))
        yield rb.filter(ok).drop_columns([ERR, PAYLOAD])


def _cast(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for rb in batches:
        if rb.schema != schema:
            with contextlib.suppress(pa.ArrowInvalid, NotImplementedError, AttributeError, ValueError):
                rb = rb.cast(schema)
        yield rb


def run_partitions(sink: Any, shaped: Any, batch_id: int, split: bool) -> PartitionResult:
    """Write every partition of `shaped` from its executor; the driver gets one result row per partition."""
    schema = arrow_schema(shaped)
    if split:
        schema = pa.schema([f for f in schema if f.name not in (ERR, PAYLOAD)])
    ctx = dataclasses.replace(sink.ctx, echo=None, run=sink.run_id())
    state = {k: getattr(sink, k) for k in type(sink).shipped}
    writer = PartitionWriter(type(sink), sink.spec, ctx, batch_id, schema, split, state,
                             settings.current().test_partition_pause)
    out = PartitionResult()
    for r in shaped.mapInArrow(writer, RESULT_DDL).collect():
        if r["kind"] == "part":
            out.partitions += 1
            out.rows += r["rows"]
            out.chunks += r["chunks"]
            out.retries += r["retries"]
            out.skipped += bool(r["skipped"])
        elif r["kind"] == "log":
            log.log(int(r["err"]), "partition %d: %s", r["part"], r["payload"])
        elif r["kind"] == "failed":
            out.failed.append((r["err"], r["payload"]))
        else:
            out.rejected.append((r["err"], r["payload"]))
    return out


def _pause(folder: str, part: int) -> None:
    """Tests: partition 0, first attempt, says where it runs (`paused-<pid>`) and waits after committing, so a
    test can kill its executor between the partition's commit and the driver's."""
    from pyspark import TaskContext

    if part != 0 or TaskContext.get().attemptNumber() != 0:  # type: ignore[union-attr]  # (in a task)
        return
    with open(os.path.join(folder, f"paused-{os.getpid()}"), "w"):
        pass
    time.sleep(60)
