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

Only etl's own sentinel counts: each run has a random nonce, the sentinel it writes carries it, and the
watermarks keep only rows whose nonce hashes to the run's (the plan holds the hash, not the nonce). Any
other file in `_etl_drain/` (a stray JSON file, a sentinel of an earlier run) is ignored with a warning.

The file source is always part of the plan (a query's sources are fixed by its checkpoint),
so a pipeline run continuously can be drained later from the same checkpoint.

After a drain the checkpoint holds `_etl_drained.json` (when and why). Its watermark has passed
every event, so any later event would be late: a later run of a pipeline with windows, joins or
dedupes on that checkpoint is refused (E408) with a hint to start a new checkpoint.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import secrets
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from etl.compile.context import CompileError

SENTINEL_DIR = "_etl_drain"
MARK = "_etl_drained.json"
REQUEST = "_etl_drain_request"  # written by `etl drain PIPELINE`; a running pipeline drains when it appears
FLAG = "_etl_drain_flag"
SENTINEL_TIME = "9999-01-01T00:00:00.000Z"

log = logging.getLogger("etl.run")
_dir: ContextVar[tuple[str, str] | None] = ContextVar("etl_drain_dir", default=None)  # (folder, nonce's hash)


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def _hash(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


@contextlib.contextmanager
def sentinels(checkpoint: str, nonce: str) -> Iterator[None]:
    """While compiling a run's plan: every watermark reads the drain folder of `checkpoint`, the sentinel of the
    run with `nonce` only."""
    d = Path(checkpoint) / SENTINEL_DIR
    d.mkdir(parents=True, exist_ok=True)
    token = _dir.set((str(d), _hash(nonce)))
    try:
        yield
    finally:
        _dir.reset(token)


def watermarked(df: Any, column: str, delay: str) -> Any:
    """`df.withWatermark(column, delay)`, with the drain sentinel counted by the watermark and dropped after it."""
    drain = _dir.get()
    if drain is None or not df.isStreaming:
        return df.withWatermark(column, delay)
    from pyspark.sql import functions as F

    d, hashed = drain
    sentinel = df.sparkSession.readStream.schema("t timestamp, nonce string").json(d)
    sentinel = sentinel.where(F.sha2(F.col("nonce"), 256) == F.lit(hashed))  # this run's sentinel only
    sentinel = sentinel.select(F.col("t").alias(column), F.lit(True).alias(FLAG))
    out = df.unionByName(sentinel, allowMissingColumns=True).withWatermark(column, delay)
    # The filter is a barrier: it reads the event-time column and is not deterministic (`spark_partition_id() >= 0`,
    # always true), so the optimizer neither pushes it below the watermark nor pushes later predicates (a filter's
    # condition, a join's inferred `isnotnull(key)`) through it into the union, where they would drop the sentinel
    sentinel_ts = F.lit(SENTINEL_TIME).cast("timestamp")
    keep = (F.col(FLAG).isNull() | (F.col(f"`{column}`") != sentinel_ts)) & (F.spark_partition_id() >= F.lit(0))
    return out.where(keep).drop(FLAG)


def sentinel_name(nonce: str) -> str:
    return f"sentinel-{_hash(nonce)[:16]}.json"


def write_sentinel(checkpoint: str, nonce: str) -> None:
    d = Path(checkpoint) / SENTINEL_DIR
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / ".sentinel.json.tmp"  # the file source skips names starting with '.'
    tmp.write_text(json.dumps({"t": SENTINEL_TIME, "nonce": nonce}) + "\n")
    os.replace(tmp, d / sentinel_name(nonce))


def warn_strays(checkpoint: str, warned: set[str]) -> set[str]:
    """Warn (once per name in `warned`) of the files in the drain folder that no sentinel of this run wrote:
    the watermarks ignore them. Returns the names warned of."""
    try:
        names = sorted(e.name for e in os.scandir(Path(checkpoint) / SENTINEL_DIR)
                       if not e.name.startswith((".", "_")) and e.name not in warned)
    except FileNotFoundError:
        return warned
    for name in names:
        log.warning("etl: %s/%s/%s was not written by this run's drain: ignored (only `etl drain`, SIGUSR1 or "
                    "--drain move the watermarks)", checkpoint, SENTINEL_DIR, name)
    return warned | set(names)


def mark_drained(checkpoint: str, how: str, nonce: str) -> None:
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    (Path(checkpoint) / MARK).write_text(json.dumps({"drained_at": now, "how": how}) + "\n")
    with contextlib.suppress(FileNotFoundError):  # read and committed: a later run would warn of it
        (Path(checkpoint) / SENTINEL_DIR / sentinel_name(nonce)).unlink()


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
    p.write_text(datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds") + "\n")
    return p


def requested(checkpoint: str) -> bool:
    return (Path(checkpoint) / REQUEST).exists()


def clear_request(checkpoint: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (Path(checkpoint) / REQUEST).unlink()


def refuse_drained(graph: Any, checkpoint: str) -> None:
    """A drained checkpoint's watermark is past every event: with state (windows, joins, dedupes), a later run
    would see every new event as late. Refused: E408 at the first stateful node."""
    record = drained(checkpoint)
    stateful = [n for n in graph.of_kind("transform") if n.spec.WATERMARK_STATE]
    if record is None or not stateful:
        return
    raise CompileError(f"checkpoint {checkpoint} was drained ({record.get('how')}, {record.get('drained_at')}): its "
                       f"watermark is past every event, so '{stateful[0].id}' would treat all new events as late",
                       stateful[0], code="E408",
                       hint="run over new data with a new checkpoint (--checkpoint DIR, or remove the folder)")
