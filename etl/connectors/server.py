"""Shared parts of the sinks that write to a server (kafka, mysql, elasticsearch).

* Messages name the component and its place in the pipeline file:
  ``mysql sink 'stats' (pipeline.yaml:42:5): ...``.
* ``is_committed`` asks the server (the marker lives next to the data, written
  in the same transaction) and is retried with the sink's backoff like a
  write, so an outage at the start of a batch does not fail the query.
* Rows a server rejects one by one (a document its mapping refuses) go to the
  pipeline's dead-letter sink with the reason, exactly once per batch id.
"""

from __future__ import annotations

from datetime import datetime, UTC
from typing import Any

import pyarrow as pa

from etl import dead_letters, registry
from etl.runtime.runner import default_dead_letter_spec
from etl.runtime.sink import AbstractSink, SinkContext, WriteResult, run_tag as tag


class ServerSink(AbstractSink):
    live = True  # its client (and what it knows it committed) kept between micro-batches on a worker

    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self._not_committed: int | None = None  # batch id known not to be committed yet
        self.rejects = Rejects(self)

    @property
    def label(self) -> str:
        where = f" ({self.ctx.where})" if self.ctx.where else ""
        return f"{self.spec.type} sink '{self.ctx.sink_id}'{where}"

    def committed(self, batch_id: int) -> bool:  # pragma: no cover - abstract
        """Ask the server whether `batch_id` was committed (raise TransientError while unreachable)."""
        raise NotImplementedError

    def is_committed(self, batch_id: int) -> bool:
        if self._not_committed == batch_id:
            return False
        done = self._retry("commit check", lambda: self.committed(batch_id), WriteResult())
        self._not_committed = None if done else batch_id
        return done

    def mark_committed(self, batch_id: int) -> None:
        """The marker was written with the data (same transaction)."""
        self._not_committed = None

    def reuse(self, ctx: SinkContext) -> None:
        super().reuse(ctx)
        self._not_committed = None
        self.rejects.clear()  # the last batch's went back to the driver with its result


def run_tag(ctx: SinkContext) -> str:
    """Stable for one checkpoint (Spark's query id): a fresh checkpoint never matches old markers."""
    return ctx.run or tag(ctx.checkpoint)


DEAD_SCHEMA = dead_letters.arrow_schema()


class Rejects:
    """Rows rejected by the server during one batch, written to the dead-letter sink at commit."""

    def __init__(self, owner: ServerSink):
        self.owner = owner
        self.rows: list[tuple[str, str]] = []  # (reason, payload)
        self._sink: AbstractSink | None = None
        self.total = 0

    def clear(self) -> None:
        self.rows = []

    def add(self, reason: str, payload: str) -> None:
        self.rows.append((reason, payload))

    def _dead_letter_sink(self) -> AbstractSink:
        if self._sink is None:
            ctx = self.owner.ctx
            spec = ctx.dead_letter or default_dead_letter_spec(ctx.state_dir)
            sub = SinkContext(ctx.pipeline, f"{ctx.sink_id}.rejected", f"{ctx.sink_id}.rejected.{ctx.scope}",
                              ctx.state_dir, ctx.base_dir, echo=ctx.echo, checkpoint=ctx.checkpoint,
                              sleep=ctx.sleep, where=ctx.where)
            self._sink = registry.lookup("sink", spec.type).load_builder()(spec, sub)
        return self._sink

    def flush(self, batch_id: int) -> int:
        """Write this batch's rejected rows to dead letters (idempotent per batch id); returns their number."""
        if not self.rows or self.owner.ctx.partition is not None:
            return 0  # on an executor: the partition's rejected rows go back to the driver, which writes them
        now = datetime.now(UTC)
        n = len(self.rows)
        table = pa.table({
            "pipeline": [self.owner.ctx.pipeline] * n,
            "stage": [self.owner.ctx.sink_id] * n,
            "reason": [r for r, _ in self.rows],
            "payload": [p for _, p in self.rows],
            "time": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
        }, schema=DEAD_SCHEMA)
        sink = self._dead_letter_sink()
        if sink.is_committed(batch_id):
            self.rows = []
            return 0
        from pyspark.sql import SparkSession

        # through a (small) DataFrame: every sink type shapes its rows in the JVM (prepare)
        sink.write_batch(SparkSession.active().createDataFrame(table), batch_id)
        self.total += n
        self.rows = []
        return n

    def close(self) -> None:
        if self._sink is not None:
            self._sink.close()
