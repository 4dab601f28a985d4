"""rocketmq sink: each micro-batch as messages of one topic, with a key, a tag and a dedup id.

Delivery is **at-least-once** (`etl explain` says so): RocketMQ has no transaction
spanning a batch here, so nothing makes a batch's messages appear all at once.
What the sink does to keep duplicates out:

* Every message carries a deterministic id in the user property `etl_msg_id`
  (and as its key when the sink has no `key`):
  `<pipeline>:<sink>:<query>:<run>:<batch id>:<16 hex digits of blake2b(key, body)>`,
  with `#2`, `#3` ... for repeated identical rows of one batch. A replayed batch
  produces the same ids, so consumers can drop duplicates by id.
* A batch committed by the sink (marker in the checkpoint) is never sent again.
* Before the first message of a batch the sink records the topic's queue end
  offsets (`<batch>.begin` next to the commit markers). When the same batch is
  written again (a replay after a crash) or a chunk is retried after a failed
  send, the sink first reads the topic back from those offsets and skips rows
  whose id is already there. Duplicates remain possible only in narrow windows
  (a send that the broker stores after the read-back looked; a broker that loses
  acknowledged messages), hence at-least-once.

`key` is a Spark SQL expression computed in the JVM with the JSON body
(`to_json` of the row); `tag` is the message tag. Sends are synchronous, from a
few threads (the native client's batch send is broken against 5.x brokers).
A broker or name server that cannot be reached raises TransientError (retried
with the sink's `retry` policy); a message the broker refuses for good (too
large) raises TerminalError.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa

from etl.connectors import rocketmq_client as rmq
from etl.components.sources.rocketmq.build import pull_range
from etl.runtime.sink import AbstractSink, SinkContext, TerminalError, TransientError, run_tag

PROP_ID = "etl_msg_id"
SEND_THREADS = 4
READBACK_GROUP = "etl-sink-readback"


class RocketMQSink(AbstractSink):
    live = True  # its send threads kept between micro-batches on a worker (the producer is shared per process)

    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self._pool: ThreadPoolExecutor | None = None
        self._prefix = ""
        self._occurrences: dict[str, int] = {}
        self._present: set[str] = set()
        self._begin_offsets: dict[str, int] = {}
        self._chunk: tuple[pa.Table, list[str], list[bool]] | None = None
        self.sent = 0  # messages sent by this sink (tests, progress)
        self.skipped = 0  # rows found already in the topic and not sent again

    @property
    def label(self) -> str:
        return f"rocketmq sink '{self.ctx.sink_id}'" + (f" ({self.ctx.where})" if self.ctx.where else "")

    # ------------------------------------------------------------ shaping in the JVM
    def prepare_columns(self, df: Any) -> list[Any] | None:
        from pyspark.sql import functions as F

        body = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]))
        key = F.expr(self.spec.key).cast("string") if self.spec.key else F.lit(None).cast("string")
        return [key.alias("key"), body.alias("body")]

    # ------------------------------------------------------------ markers
    def _begin_marker(self, batch_id: int) -> Path:
        return self._marker(batch_id).with_suffix(".begin")

    def mark_committed(self, batch_id: int) -> None:
        super().mark_committed(batch_id)
        self._begin_marker(batch_id).unlink(missing_ok=True)
        for old in self._begin_marker(batch_id).parent.glob("*.begin"):  # left by batches that never committed
            try:
                if int(old.stem) < batch_id:
                    old.unlink()
            except (ValueError, OSError):
                pass

    # ------------------------------------------------------------ server calls
    def _producer(self) -> rmq.Producer:
        try:
            return rmq.shared_producer(self.spec.namesrv, self.spec.group)
        except ValueError as e:
            raise TerminalError(str(e)) from None
        except rmq.RocketMQError as e:
            raise TransientError(str(e)) from None

    def _queues(self) -> list[rmq.Queue]:
        try:
            return rmq.topic_queues(self.spec.namesrv, self.spec.topic) or []
        except ValueError as e:
            raise TerminalError(str(e)) from None
        except rmq.RocketMQError as e:
            raise TransientError(str(e)) from None

    def _end_offsets(self) -> dict[str, int]:
        consumer = rmq.shared_consumer(self.spec.namesrv, READBACK_GROUP, (PROP_ID,))
        try:
            return {q.key: consumer.bounds(self.spec.topic, q)[1] for q in self._queues()}
        except rmq.Unavailable as e:
            raise TransientError(str(e)) from None

    def _read_back(self) -> set[str]:
        """Ids of this batch already in the topic (sent since the batch began)."""
        consumer = rmq.shared_consumer(self.spec.namesrv, READBACK_GROUP, (PROP_ID,))
        found: set[str] = set()
        try:
            for q in self._queues():
                lo, hi = consumer.bounds(self.spec.topic, q)
                start = max(lo, self._begin_offsets.get(q.key, lo))
                for m in pull_range(consumer, self.spec.topic, q, start, hi, self.spec.tag or "*", grace=0.0):
                    mid = m.properties.get(PROP_ID, "")
                    if mid.startswith(self._prefix):
                        found.add(mid)
        except rmq.Unavailable as e:
            raise TransientError(f"reading back batch messages: {e}") from None
        except rmq.RocketMQError as e:
            raise TransientError(f"reading back batch messages: {e}") from None
        return found

    # ------------------------------------------------------------ one batch
    def begin(self, batch_id: int, schema: pa.Schema) -> None:
        c = self.ctx
        self._prefix = f"{c.pipeline}:{c.sink_id}:{c.scope}:{c.run or run_tag(c.checkpoint)}:{batch_id}:"
        self._occurrences = {}
        self._chunk = None
        self._producer()
        marker = self._begin_marker(batch_id)
        if marker.exists():  # the batch was started before (a replay): skip what is already there
            self._begin_offsets = {k: int(v) for k, v in json.loads(marker.read_text())["offsets"].items()}
            self._present = self._read_back()
            return
        self._begin_offsets = self._end_offsets()
        self._present = set()
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(json.dumps({"topic": self.spec.topic, "offsets": self._begin_offsets}) + "\n")
        os.replace(tmp, marker)

    def message_ids(self, keys: list[str | None], bodies: list[str]) -> list[str]:
        out = []
        for k, b in zip(keys, bodies, strict=True):
            h = hashlib.blake2b(digest_size=8)
            h.update(b"\xff" if k is None else k.encode() + b"\x00")
            h.update(b.encode())
            mid = self._prefix + h.hexdigest()
            n = self._occurrences.get(mid, 0) + 1
            self._occurrences[mid] = n
            out.append(mid if n == 1 else f"{mid}#{n}")
        return out

    def batch_insert(self, rows: pa.Table) -> None:
        keys = rows.column("key").to_pylist()
        bodies = rows.column("body").to_pylist()
        if self._chunk is None or self._chunk[0] is not rows:
            self._chunk = (rows, self.message_ids(keys, bodies), [False] * rows.num_rows)
        else:  # a retry of this chunk: a send reported as failed may still have been stored
            self._present |= self._read_back()
        _, ids, sent = self._chunk
        todo = [i for i in range(rows.num_rows) if not sent[i]]
        already = [i for i in todo if ids[i] in self._present]
        for i in already:
            sent[i] = True
        self.skipped += len(already)
        todo = [i for i in todo if not sent[i]]
        if not todo:
            return
        producer = self._producer()
        errors: list[BaseException] = []
        lock = threading.Lock()

        def work(part: list[int]) -> None:
            for i in part:
                try:
                    producer.send(self.spec.topic, bodies[i].encode(), keys=keys[i] or ids[i], tags=self.spec.tag,
                                  properties={PROP_ID: ids[i]})
                except rmq.RocketMQError as e:
                    with lock:
                        errors.append(e)
                    return
                sent[i] = True
                with lock:
                    self.sent += 1

        parts = [todo[k::SEND_THREADS] for k in range(SEND_THREADS)]
        if len(todo) < 2 * SEND_THREADS:
            work(todo)
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(SEND_THREADS, thread_name_prefix=f"rocketmq-{self.ctx.sink_id}")
            for f in [self._pool.submit(work, p) for p in parts if p]:
                f.result()
        if errors:
            self._raise(errors, sum(not s for s in sent))

    def _raise(self, errors: list[BaseException], unsent: int) -> None:
        rejected = [e for e in errors if isinstance(e, rmq.Rejected)]
        if rejected:
            raise TerminalError(f"topic {self.spec.topic!r} refused a message: {rejected[0]}")
        reason = str(errors[0])
        try:
            rmq.topic_queues(self.spec.namesrv, self.spec.topic)
        except rmq.Unavailable as e:  # say the clearer thing: the name server is not there
            reason = str(e)
        except (rmq.RocketMQError, ValueError):
            pass
        raise TransientError(f"{unsent} of the messages to topic {self.spec.topic!r} were not sent: {reason}")

    def reuse(self, ctx: SinkContext) -> None:
        super().reuse(ctx)
        self._chunk = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
