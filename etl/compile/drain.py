"""Drain: the input is complete, so every open window, session, join buffer and dedupe state is flushed.

How: every place a watermark is declared (`withWatermark`, in etl/compile/watermark.py and
windows/native.py) reads, besides its input, a tiny file stream: the folder `_etl_drain/` of the
pipeline's checkpoint. It is empty in a normal run. To drain, the runner first processes
everything available (an AvailableNow pass: exactly `--once`), then writes one sentinel row
there whose event time is far in the future (year 9999) and runs a second AvailableNow pass:
the sentinel is counted by each watermark (Spark's watermark is the minimum over them, so
every one must see it) and removed right after it, before any transform reads the rows.
The batch after it (Spark's no-data batch) has its watermark past every event: windows and
sessions close and are written, stream-join buffers emit their unmatched outer rows, dedupe
state is dropped, and the sinks commit as for any batch.

The file source is always part of the plan (a query's sources are fixed by its checkpoint),
so a pipeline run continuously can be drained later from the same checkpoint.

After a drain the checkpoint holds `_etl_drained.json` (when and why). Its watermark has passed
every event, so any later event would be late: a later run of a pipeline with windows, joins or
dedupes on that checkpoint is refused (E408) with a hint to start a new checkpoint.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Iterator

SENTINEL_DIR = "_etl_drain"
MARK = "_etl_drained.json"
REQUEST = "_etl_drain_request"  # written by `etl drain PIPELINE`; a running pipeline drains when it appears
FLAG = "_etl_drain_flag"
SENTINEL_TIME = "9999-01-01T00:00:00.000Z"
STATEFUL = ("window", "sigma_correlation", "join", "dedupe")

_dir: ContextVar[str | None] = ContextVar("etl_drain_dir", default=None)


@contextlib.contextmanager
def sentinels(checkpoint: str) -> Iterator[None]:
    """While compiling a run's plan: every watermark reads the drain folder of `checkpoint`."""
    d = Path(checkpoint) / SENTINEL_DIR
    d.mkdir(parents=True, exist_ok=True)
    token = _dir.set(str(d))
    try:
        yield
    finally:
        _dir.reset(token)


def watermarked(df: Any, column: str, delay: str) -> Any:
    """`df.withWatermark(column, delay)`, with the drain sentinel counted by the watermark and dropped after it."""
    d = _dir.get()
    if d is None or not df.isStreaming:
        return df.withWatermark(column, delay)
    from pyspark.sql import functions as F

    sentinel = df.sparkSession.readStream.schema("t timestamp").json(d)
    sentinel = sentinel.select(F.col("t").alias(column), F.lit(True).alias(FLAG))
    out = df.unionByName(sentinel, allowMissingColumns=True).withWatermark(column, delay)
    # The filter is a barrier: it reads the event-time column and is not deterministic (`spark_partition_id() >= 0`,
    # always true), so the optimizer neither pushes it below the watermark nor pushes later predicates (a filter's
    # condition, a join's inferred `isnotnull(key)`) through it into the union, where they would drop the sentinel
    sentinel_ts = F.lit(SENTINEL_TIME).cast("timestamp")
    keep = (F.col(FLAG).isNull() | (F.col(f"`{column}`") != sentinel_ts)) & (F.spark_partition_id() >= F.lit(0))
    return out.where(keep).drop(FLAG)


def write_sentinel(checkpoint: str) -> None:
    d = Path(checkpoint) / SENTINEL_DIR
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / ".sentinel.json.tmp"  # the file source skips names starting with '.'
    tmp.write_text(json.dumps({"t": SENTINEL_TIME}) + "\n")
    os.replace(tmp, d / "sentinel.json")


def mark_drained(checkpoint: str, how: str) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    (Path(checkpoint) / MARK).write_text(json.dumps({"drained_at": now, "how": how}) + "\n")


def drained(checkpoint: str) -> dict | None:
    """The drain record of `checkpoint` (None when it was never drained)."""
    try:
        return json.loads((Path(checkpoint) / MARK).read_text())
    except (OSError, ValueError):
        return None


def request(checkpoint: str) -> Path:
    """`etl drain`: ask the pipeline running on `checkpoint` to drain."""
    p = Path(checkpoint) / REQUEST
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds") + "\n")
    return p


def requested(checkpoint: str) -> bool:
    return (Path(checkpoint) / REQUEST).exists()


def clear_request(checkpoint: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (Path(checkpoint) / REQUEST).unlink()


def refuse_drained(graph: Any, checkpoint: str) -> None:
    """A drained checkpoint's watermark is past every event: with state (windows, joins, dedupes), a later run
    would see every new event as late. Refused: E408 at the first stateful node."""
    from etl.compile.context import CompileError

    record = drained(checkpoint)
    stateful = [n for n in graph.of_kind("transform") if n.type in STATEFUL]
    if record is None or not stateful:
        return
    raise CompileError(f"checkpoint {checkpoint} was drained ({record.get('how')}, {record.get('drained_at')}): its "
                       f"watermark is past every event, so '{stateful[0].id}' would treat all new events as late",
                       stateful[0], code="E408",
                       hint="run over new data with a new checkpoint (--checkpoint DIR, or remove the folder)")
