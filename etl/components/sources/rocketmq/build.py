"""rocketmq source: a replayable PySpark streaming Python data source (`etl_rocketmq`).

* Partitions are the topic's message queues; the offset Spark checkpoints is
  `{"topic": t, "queues": {"<broker>/<queue id>": next offset, ...}}`, so a
  restarted query resumes exactly where its last committed batch ended and a
  replayed batch re-reads exactly the same messages (exactly once, given an
  idempotent sink).
* `starting: earliest | latest` picks the first offsets of a new checkpoint.
  A queue that appears later (topic created after the start, queues added) is
  first registered at its earliest offset by an empty batch, then read.
* `max_messages_per_trigger` is a read limit (spread over the queues in
  proportion to their backlog); `--once` (AvailableNow) reads everything there
  was at the start, in batches of that size.
* `read` pulls exactly [start, end) of one queue by offset through the native
  client (rocketmq_client); messages a tag expression (`tags`) filters out are
  simply skipped. A broker that does not answer is retried for
  `UNAVAILABLE_GRACE` seconds before the task fails; messages deleted by the
  broker's retention before they were read fail the query (never skipped
  silently).
* `format: json` decodes bodies to the declared schema in the JVM; a body that
  is not JSON, not an object or does not fit the schema goes to dead letters
  with the reason and the original text. `text` / `raw` give the body as a
  string / bytes next to key, topic, timestamp (the broker's store time) and tags.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from etl.connectors import rocketmq_client as rmq
from etl.connectors.api import CompileError, from_shared, register_data_source, with_event_time
from etl.connectors.messages import bounded_value, decode_json

NAME = "etl_rocketmq"
RAW_SCHEMA = ("`key` string, `tags` string, `body` binary, `topic` string, `queue` string, "
              "`offset` bigint, `timestamp` timestamp")
UNAVAILABLE_GRACE = 120.0  # seconds a pull retries an unreachable broker before the task fails
ROWS_PER_ARROW_BATCH = 4096

log = logging.getLogger("etl.rocketmq")


# ------------------------------------------------------------------ offsets
def split_limit(start: dict[str, int], latest: dict[str, int], max_rows: int) -> dict[str, int]:
    """End offsets reading at most `max_rows` messages past `start`, spread over the queues in
    proportion to their backlog (largest remainder; deterministic)."""
    avail = {q: latest[q] - s for q, s in start.items() if latest.get(q, s) > s}
    total = sum(avail.values())
    if total <= max_rows:
        return {q: max(s, latest.get(q, s)) for q, s in start.items()}
    take = {q: a * max_rows // total for q, a in avail.items()}
    rest = max_rows - sum(take.values())
    for q in sorted(avail, key=lambda q: (-(avail[q] * max_rows % total), q)):
        if rest <= 0:
            break
        if take[q] < avail[q]:
            take[q] += 1
            rest -= 1
    return {q: s + take.get(q, 0) for q, s in start.items()}


class QueueRange(InputPartition):
    """Messages [start, end) of one queue."""

    def __init__(self, queue: str, start: int, end: int):
        self.queue, self.start, self.end = queue, start, end

    def __repr__(self) -> str:
        return f"QueueRange({self.queue}, {self.start}, {self.end})"


# ------------------------------------------------------------------ reading one queue
def pull_range(consumer: rmq.PullConsumer, topic: str, queue: rmq.Queue, start: int, end: int, expr: str = "*",
               grace: float = UNAVAILABLE_GRACE, sleep: Any = time.sleep,
               batch: int = 32) -> Iterator[rmq.Message]:
    """Every message of `queue` with start <= offset < end that matches `expr`, in offset order."""
    cur = start
    waited_since: float | None = None
    delay = 0.2
    while cur < end:
        res = consumer.pull(topic, queue, cur, min(batch, end - cur), expr)
        if res.status in (rmq.PULL_FOUND, rmq.PULL_NO_MATCHED_MSG) and res.next_offset > cur:
            waited_since, delay = None, 0.2
            for m in res.messages:
                if m.offset >= end:
                    return
                if m.offset >= cur:
                    yield m
            cur = res.next_offset
            continue
        if res.status == rmq.PULL_OFFSET_ILLEGAL and cur < res.min_offset and res.max_offset > res.min_offset:
            raise rmq.RocketMQError(
                f"messages {cur}..{min(end, res.min_offset) - 1} of queue {queue.key} of topic {topic!r} were "
                f"deleted by the broker (retention) before they were read; the queue now starts at "
                f"{res.min_offset}. Start from a new checkpoint to read what is left")
        # BROKER_TIMEOUT (unreachable), NO_NEW_MSG / OFFSET_ILLEGAL below the planned end (a restarted
        # broker still recovering its queues): wait and ask again, for `grace` seconds at most
        now = time.monotonic()
        waited_since = now if waited_since is None else waited_since
        if now - waited_since > grace:
            detail = (rmq.latest_error() or "no answer") if res.status == rmq.PULL_BROKER_TIMEOUT else \
                f"queue ends at {res.max_offset}"
            raise rmq.Unavailable(f"cannot read offsets {cur}..{end - 1} of queue {queue.key} of topic {topic!r} "
                                  f"(name server {consumer.namesrv}): {res.status_name} for {grace:.0f}s: {detail}")
        sleep(delay)
        delay = min(delay * 2, 5.0)


def to_arrow(msgs: list[rmq.Message], topic: str) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([
        pa.array([m.keys or None for m in msgs], pa.string()),
        pa.array([m.tags or None for m in msgs], pa.string()),
        pa.array([m.body for m in msgs], pa.binary()),
        pa.array([topic] * len(msgs), pa.string()),
        pa.array([m.queue.key for m in msgs], pa.string()),
        pa.array([m.offset for m in msgs], pa.int64()),
        pa.array([m.store_ms * 1000 for m in msgs], pa.timestamp("us", tz="UTC")),
    ], names=["key", "tags", "body", "topic", "queue", "offset", "timestamp"])


# ------------------------------------------------------------------ the stream reader
class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]):
        self.opts = json.loads(options["spec"])
        self.namesrv: str = self.opts["namesrv"]
        self.topic: str = self.opts["topic"]
        self.group: str = self.opts["group"]
        self.tags: str = self.opts.get("tags") or "*"
        self.label = f"rocketmq source '{self.opts['id']}'"
        self.per_trigger: int | None = self.opts.get("max_messages_per_trigger")
        self.target: dict[str, int] | None = None  # AvailableNow: end offsets fixed at the start
        self._warned = 0.0

    def _consumer(self) -> rmq.PullConsumer:
        return rmq.shared_consumer(self.namesrv, self.group)

    def _bounds(self) -> dict[str, tuple[int, int]]:
        """(min, max) offset of every readable queue now; {} while the topic does not exist."""
        try:
            queues = rmq.topic_queues(self.namesrv, self.topic)
        except rmq.Unavailable as e:
            raise rmq.Unavailable(f"{self.label}: {e}") from None
        if queues is None:
            return {}
        c = self._consumer()
        out = {}
        for q in queues:
            try:
                out[q.key] = c.bounds(self.topic, q)
            except rmq.Unavailable as e:
                raise rmq.Unavailable(f"{self.label}: {e}") from None
        return out

    def _bounds_patiently(self, grace: float = UNAVAILABLE_GRACE) -> dict[str, tuple[int, int]]:
        deadline = time.monotonic() + grace
        delay = 0.5
        while True:
            try:
                return self._bounds()
            except rmq.Unavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _offsets(self, start: dict) -> dict[str, int]:
        topic = start.get("topic", self.topic)
        if topic != self.topic:
            raise ValueError(f"{self.label}: the checkpoint holds offsets of topic {topic!r}, not {self.topic!r}; "
                             "use a new checkpoint after changing the topic")
        return {k: int(v) for k, v in start.get("queues", {}).items()}

    def _wrap(self, queues: dict[str, int]) -> dict:
        return {"topic": self.topic, "queues": dict(sorted(queues.items()))}

    def initialOffset(self) -> dict:
        bounds = self._bounds()  # an unreachable name server fails the start with a clear message
        pick = 0 if self.opts.get("starting", "earliest") == "earliest" else 1
        return self._wrap({q: b[pick] for q, b in bounds.items()})

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = {q: b[1] for q, b in self._bounds_patiently().items()}

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.per_trigger) if self.per_trigger else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: Any) -> dict:
        begin = self._offsets(start)
        if self.target is not None:
            latest = self.target
            fresh: dict[str, Any] = {q: None for q in latest if q not in begin}
        else:
            try:
                bounds = self._bounds()
            except rmq.Unavailable as e:  # nothing new while the broker is away; the next trigger asks again
                if time.monotonic() - self._warned > 30:
                    self._warned = time.monotonic()
                    log.warning("%s; no new messages until it is back", e)
                return self._wrap(begin)
            latest = {q: b[1] for q, b in bounds.items()}
            fresh = {q: b[0] for q, b in bounds.items() if q not in begin}
        if fresh:  # register new queues at their earliest offset (an empty range): read from the next batch
            if any(v is None for v in fresh.values()):
                fresh = {q: b[0] for q, b in self._bounds_patiently().items() if q in fresh}
            return self._wrap({**begin, **fresh})
        if isinstance(limit, ReadMaxRows):
            return self._wrap(split_limit(begin, latest, limit.max_rows))
        return self._wrap({q: max(s, latest.get(q, s)) for q, s in begin.items()})

    def partitions(self, start: dict, end: dict) -> list[QueueRange]:
        s, e = self._offsets(start), self._offsets(end)
        return [QueueRange(q, s.get(q, hi), hi) for q, hi in sorted(e.items()) if hi > s.get(q, hi)]

    def read(self, partition: QueueRange) -> Iterator[pa.RecordBatch]:  # type: ignore[override]  # the partitions it made
        consumer = self._consumer()
        queue = rmq.Queue.from_key(partition.queue)
        msgs: list[rmq.Message] = []
        for m in pull_range(consumer, self.topic, queue, partition.start, partition.end, self.tags):
            msgs.append(m)
            if len(msgs) >= ROWS_PER_ARROW_BATCH:
                yield to_arrow(msgs, self.topic)
                msgs = []
        if msgs:
            yield to_arrow(msgs, self.topic)

    def commit(self, end: dict) -> None:
        pass  # offsets live in Spark's checkpoint; nothing is acknowledged to the broker

    def stop(self) -> None:
        pass  # the consumer is shared by the process (rocketmq_client.shared_consumer)


class RocketMQDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return RAW_SCHEMA

    def streamReader(self, schema: Any) -> RocketMQStreamReader:
        return RocketMQStreamReader(self.options)


# ------------------------------------------------------------------ compile
def spec_options(spec: Any, node_id: str) -> dict[str, Any]:
    return {"id": node_id, "namesrv": spec.namesrv, "topic": spec.topic, "group": spec.group, "tags": spec.tags,
            "starting": spec.starting, "max_messages_per_trigger": spec.max_messages_per_trigger}


def decode(df: Any, spec: Any, node: Any, parser: str | None = None) -> Any:
    """Raw messages -> the source's columns (json: a frame with the dead-letter columns ERR/PAYLOAD; `parser`: the
    physical plan's json parser)."""
    from pyspark.sql import functions as F

    if spec.format != "json":
        value = F.col("body") if spec.format == "raw" else F.col("body").cast("string")
        return bounded_value(df.select("key", value.alias(spec.value_column), "topic", "timestamp", "tags"),
                             spec.value_column)
    return decode_json(df, F.col("body").cast("string"), spec, node, "rocketmq", empty="empty message body",
                       parser=parser)


def check_reachable(node: Any) -> None:
    """Fail the start with the component and its line when the name server does not answer."""
    spec = node.spec
    try:
        rmq.topic_queues(spec.namesrv, spec.topic)
    except ValueError as e:
        raise CompileError(f"rocketmq source '{node.id}': {e}", node, "namesrv", code="E102") from None
    except rmq.RocketMQError as e:
        raise CompileError(f"rocketmq source '{node.id}': {e}", node, "namesrv",
                           "check namesrv (host:port of a RocketMQ name server) and that it runs",
                           code="E407") from None


def build(ctx: Any, node: Any) -> Any:
    spec = node.spec
    check_reachable(node)
    register_data_source(ctx.spark, RocketMQDataSource)
    raw = ctx.spark.readStream.format(NAME).option("spec", json.dumps(spec_options(spec, node.id))).load()
    parser = ctx.built_with(node, "parser") if spec.format == "json" else None
    out = decode(raw, spec, node, parser)
    if spec.event_time is not None:
        out = with_event_time(out, node, spec.event_time)
    return from_shared(out, ctx.pipeline, node.id)
