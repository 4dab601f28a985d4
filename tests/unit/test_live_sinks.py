"""Sinks live across micro-batches (issue 42, etl/runtime/partitions.py LIVE): a worker keeps a partition's sink
instance after a write that raised nothing, and gives it back for the partition's next batch; any error, any
other identity (spec, run, partition, checkpoint) or a sink that says it cannot go on builds a new one. The Kafka
sink's carried "last committed batch" is checked against a broker that fences like Kafka's transaction
coordinator (a new producer of a transactional.id makes the older one fail), without a server: a replay on a
kept instance that another writer overtook never writes the batch twice. The worker-kill Spark test:
tests/spark/test_partition_sinks.py::test_live_sink_rebuilds_its_state_after_its_worker_is_killed."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest

from etl import registry, workercache
from etl.runtime import partitions
from etl.runtime.partitions import LIVE, checkin, checkout
from etl.runtime.sink import AbstractSink, SinkContext


@pytest.fixture(autouse=True)
def _fresh():
    workercache.clear_all()
    yield
    workercache.clear_all()


class Kept(AbstractSink):
    live = True
    made = 0

    def __init__(self, spec, ctx):
        super().__init__(spec, ctx)
        Kept.made += 1
        self.closed = 0
        self.reused = 0
        self.open = False

    def reusable(self):
        return not self.open

    def reuse(self, ctx):
        super().reuse(ctx)
        self.reused += 1

    def close(self):
        self.closed += 1


class NotKept(Kept):
    live = False


def _spec(**kw):
    options = {"id": "out", "inputs": ["x"], "type": "file", "path": "out", "format": "jsonl", **kw}
    return registry.lookup("sink", "file").spec.model_validate(options)


def _ctx(part=0, run="r1", **kw):
    return SinkContext("p", "out", f"q.p{part}", "/tmp/ckpt", "/tmp", partition=part, run=run, **kw)


def test_a_kept_instance_comes_back_for_its_partitions_next_batch_only():
    spec = _spec()
    first, key = checkout(Kept, spec, _ctx())
    assert key is not None and first.reused == 0
    checkin(first, key, ok=True)
    assert len(LIVE) == 1 and first.closed == 0
    again, key2 = checkout(Kept, spec, _ctx(sleep=lambda s: None))  # the same identity: the same instance
    assert again is first and key2 == key and first.reused == 1 and len(LIVE) == 0  # taken out while it writes
    other, _ = checkout(Kept, spec, _ctx())  # a second task of the same partition meanwhile: a new instance
    assert other is not first
    checkin(again, key2, ok=True)
    for changed in (dict(spec=_spec(batch_size=7)), dict(ctx=_ctx(part=1)), dict(ctx=_ctx(run="r2")),
                    dict(ctx=dataclasses.replace(_ctx(), checkpoint="/tmp/ckpt/q2"))):
        s, _ = checkout(Kept, changed.get("spec", spec), changed.get("ctx", _ctx()))
        assert s is not first, changed
    assert checkout(Kept, spec, _ctx())[0] is first


def test_an_error_or_an_open_batch_closes_the_instance_and_the_next_batch_builds_a_new_one():
    spec = _spec()
    s, key = checkout(Kept, spec, _ctx())
    checkin(s, key, ok=False)
    assert s.closed == 1 and len(LIVE) == 0
    s2, key = checkout(Kept, spec, _ctx())
    assert s2 is not s
    s2.open = True  # e.g. a Kafka transaction still open
    checkin(s2, key, ok=True)
    assert s2.closed == 1 and len(LIVE) == 0
    s3, key = checkout(NotKept, spec, _ctx())
    assert key is None
    checkin(s3, key, ok=True)
    assert s3.closed == 1 and len(LIVE) == 0


def test_an_instance_left_waiting_past_live_idle_is_closed_at_the_next_checkout(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(partitions.time, "monotonic", lambda: clock[0])
    idle, key = checkout(Kept, _spec(), _ctx(part=0))
    checkin(idle, key, ok=True)
    clock[0] += partitions.LIVE_IDLE - 1
    busy, key = checkout(Kept, _spec(), _ctx(part=1))
    checkin(busy, key, ok=True)
    clock[0] += 2  # partition 0's sink waited LIVE_IDLE + 1 s, partition 1's 2 s
    s, key = checkout(Kept, _spec(), _ctx(part=2))
    assert (idle.closed, busy.closed, len(LIVE)) == (1, 0, 1)
    assert checkout(Kept, _spec(), _ctx(part=1))[0] is busy
    assert checkout(Kept, _spec(), _ctx(part=0))[0] is not idle


def test_the_oldest_kept_instance_is_closed_past_live_keep(monkeypatch):
    kept = []
    for part in range(partitions.LIVE_KEEP + 1):
        s, key = checkout(Kept, _spec(), _ctx(part=part))
        checkin(s, key, ok=True)
        kept.append(s)
    assert len(LIVE) == partitions.LIVE_KEEP
    assert [s.closed for s in kept[:2]] == [1, 0]
    workercache.clear_all()
    assert all(s.closed == 1 for s in kept)


# ------------------------------------------------------------------------------------------------ kafka
class Broker:
    """One topic and its marker topic as the sink sees them: committed data and markers; a producer made for a
    transactional.id fences the one made before it (its next produce or commit fails, fatal, as PRODUCER_FENCED)."""

    def __init__(self, ck):
        self.ck = ck
        self.epoch = 0
        self.data: list[tuple[bytes | None, str]] = []
        self.markers: list[tuple[bytes, int]] = []
        self.scans = 0
        self.producers = 0
        self.fail_at_commit_only = False

    def last(self, key: bytes) -> int:
        self.scans += 1
        return max((b for k, b in self.markers if k == key), default=-1)


class FakeProducer:
    def __init__(self, broker: Broker):
        broker.epoch += 1
        broker.producers += 1
        self.broker, self.epoch = broker, broker.epoch
        self.pending: list = []
        self.commits = self.aborts = 0

    def _fenced(self):
        if self.epoch != self.broker.epoch:
            ck = self.broker.ck
            raise ck.KafkaException(ck.KafkaError(ck.KafkaError._FENCED, "fenced by a newer producer", fatal=True))

    def begin_transaction(self):
        self.pending = []

    def produce(self, topic, value=None, key=None, headers=None, on_delivery=None):
        if not self.broker.fail_at_commit_only:
            self._fenced()
        self.pending.append((topic, key, value))

    def poll(self, timeout=0):
        return 0

    def flush(self, timeout=0):
        return 0

    def commit_transaction(self, timeout=0):
        self._fenced()
        for topic, key, value in self.pending:
            if topic.startswith("_etl_commits."):
                self.broker.markers.append((key, json.loads(value)["batch"]))
            else:
                self.broker.data.append((key, value))
        self.pending = []
        self.commits += 1

    def abort_transaction(self, timeout=0):
        self.pending = []
        self.aborts += 1


@pytest.fixture()
def broker(monkeypatch):
    import confluent_kafka as ck  # a connectors dependency: installed wherever the tests run

    from etl.components.sinks.kafka import build

    b = Broker(ck)

    def make(self):
        self.producer = FakeProducer(b)

    monkeypatch.setattr(build.KafkaSink, "_make_producer", make)
    monkeypatch.setattr(build.KafkaSink, "_scan_markers", lambda self: b.last(self._marker_key()))
    return b


def _kafka(part=0):
    from etl.components.sinks.kafka.build import KafkaSink

    class KeptKafka(KafkaSink):  # etl does not keep the kafka sink yet (see KafkaSink.live): its carried state is
        live = True              # checked here, ready for when it does

    spec = registry.lookup("sink", "kafka").spec.model_validate(
        {"id": "out", "inputs": ["x"], "type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topic": "t",
         "batch_size": 2, "retry": {"max_attempts": 3, "initial_backoff": "0s"}})
    return KeptKafka, spec, _ctx(part=part, sleep=lambda s: None)


def _write(sink, batch: int, n: int = 3):
    """The executor's write of one partition (PartitionWriter): the check, then write_arrow."""
    if sink.is_committed(batch):
        return None
    rows = pa.table({"key": [f"{batch}-{i}" for i in range(n)], "value": [f"v{batch}-{i}" for i in range(n)]})
    return sink.write_arrow(rows.to_batches(), batch, rows.schema)


def _values(broker):
    return sorted(v for _, v in broker.data)


def test_kafka_kept_sink_writes_the_next_batch_with_its_producer_and_without_reading_the_markers(broker):
    cls, spec, ctx = _kafka()
    sink, key = checkout(cls, spec, ctx)
    assert _write(sink, 0).rows == 3
    assert (broker.producers, broker.scans) == (1, 1)  # a new sink: init_transactions, then the markers read once
    checkin(sink, key, ok=True)
    for batch in (1, 2):
        kept, key = checkout(cls, spec, ctx)
        assert kept is sink
        assert _write(kept, batch).rows == 3
        checkin(kept, key, ok=True)
    assert (broker.producers, broker.scans) == (1, 1)
    kept, key = checkout(cls, spec, ctx)
    assert _write(kept, 2) is None and _write(kept, 1) is None  # replays: skipped from what it carries
    assert (broker.producers, broker.scans) == (1, 1)
    assert broker.markers == [(b"p/out/q.p0/r1", 0), (b"p/out/q.p0/r1", 1), (b"p/out/q.p0/r1", 2)]
    assert len(broker.data) == 9 == len(set(_values(broker)))


@pytest.mark.parametrize("where", ["produce", "commit"])
def test_kafka_kept_sink_overtaken_by_another_writer_never_writes_a_batch_twice(broker, where):
    broker.fail_at_commit_only = where == "commit"
    cls, spec, ctx = _kafka()
    a, key = checkout(cls, spec, ctx)
    assert _write(a, 0).rows == 3 and _write(a, 1).rows == 3
    checkin(a, key, ok=True)  # worker A keeps partition 0's sink (it knows: last batch 1)
    # Spark runs partition 0 of batch 2 on worker B: a new sink fences A's producer, reads the markers, commits
    b = cls(spec, ctx)
    assert _write(b, 2).rows == 3
    # ... and batch 2 is replayed (the driver did not commit it) on worker A, whose sink still says "last: 1"
    a2, key = checkout(cls, spec, ctx)
    assert a2 is a and a._last == 1
    _write(a, 2)  # its transaction fails (fenced), it starts over on a new producer, reads the markers: aborted
    assert broker.markers.count((b"p/out/q.p0/r1", 2)) == 1
    assert _values(broker) == sorted(f"v{b}-{i}" for b in range(3) for i in range(3))  # batch 2's rows once
    # fenced at produce: the batch's rows again on a new producer, whose transaction is aborted after the markers
    # were read; fenced at commit: the retried commit reads the markers first and finds the batch there
    assert (a.producer.commits, a.producer.aborts, a._last) == (0, 1 if where == "produce" else 0, 2)
    # the next batch on A: written once, by A's new producer (which fenced B's)
    assert _write(a, 3).rows == 3 and broker.markers[-1] == (b"p/out/q.p0/r1", 3)
    assert len(broker.data) == 12 == len(set(_values(broker)))
    checkin(a, key, ok=True)
    assert checkout(cls, spec, ctx)[0] is a


def test_kafka_sink_with_an_open_transaction_is_not_kept(broker):
    cls, spec, ctx = _kafka()
    sink, key = checkout(cls, spec, ctx)
    assert not sink.is_committed(0)
    sink.begin(0, pa.schema([("key", pa.string()), ("value", pa.string())]))
    assert sink._in_txn and not sink.reusable()
    checkin(sink, key, ok=True)
    assert len(LIVE) == 0 and sink.producer is None  # closed: its transaction aborted
