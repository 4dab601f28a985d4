"""Sinks live across micro-batches (issue 42, etl/runtime/partitions.py LIVE): a worker keeps a partition's sink
instance after a write that raised nothing, and gives it back for the partition's next batch; any error, any
other identity (spec, run, partition, checkpoint) or a sink that says it cannot go on builds a new one. The Kafka
sink's carried "last committed batch" is checked against a broker that fences like Kafka's transaction
coordinator (a new producer of a transactional.id makes the older one fail), without a server: a replay on a
kept instance that another writer overtook never writes the batch twice; and against a real broker (servers), where
confluent-kafka reports the fenced producer's fatal error as a SystemError of a callback (KafkaSink._lost). The
worker-kill Spark test: tests/spark/test_partition_sinks.py::test_live_sink_rebuilds_its_state_after_its_worker_is_killed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

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
        self.lost_in_callback = False  # a fence shows as confluent-kafka shows it: SystemError from the fatal error

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
            e = ck.KafkaException(ck.KafkaError(ck.KafkaError._FENCED, "fenced by a newer producer", fatal=True))
            if self.broker.lost_in_callback:
                raise SystemError("<function KafkaSink._on_delivery> returned a result with an exception set") from e
            raise e

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

    def fenced(self):
        return self.epoch != self.broker.epoch

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

    class KeptKafka(KafkaSink):  # KafkaSink itself, under another class: no instance kept by another test
        pass

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


def test_the_kafka_sink_is_kept():
    from etl.components.sinks.kafka.build import KafkaSink

    assert KafkaSink.live is True


@pytest.mark.parametrize("where", ["produce", "commit", "commit, lost in a callback"])
def test_kafka_kept_sink_overtaken_by_another_writer_never_writes_a_batch_twice(broker, where):
    broker.fail_at_commit_only = where.startswith("commit")
    broker.lost_in_callback = where.endswith("callback")
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


def _moved_away(cls: Any, spec: Any, ctx: Any) -> tuple[Any, Any]:
    """Partition 0's batches 0 and 1 written by worker A's kept sink, then 2 and 3 by worker B's: (A's, B's)."""
    a, key = checkout(cls, spec, ctx)
    assert _write(a, 0).rows == 3 and _write(a, 1).rows == 3
    checkin(a, key, ok=True)
    b = cls(spec, ctx)
    assert _write(b, 2).rows == 3 and _write(b, 3).rows == 3
    return a, b


def test_kafka_kept_sink_given_a_later_batch_makes_its_producer_anew_before_writing(broker):
    """The partition's batches 2 and 3 went to worker B meanwhile: A's kept producer was fenced by B's. A's sink,
    given batch 4 (not the one after its last, 1), makes its producer anew (which fences B's) and reads the markers,
    instead of first failing a fenced transaction and retrying."""
    cls, spec, ctx = _kafka()
    a, b = _moved_away(cls, spec, ctx)
    fenced = a.producer
    assert fenced.fenced() and (broker.producers, broker.scans) == (2, 2)
    a2, key = checkout(cls, spec, ctx)
    assert a2 is a
    res = _write(a, 4)
    assert (res.rows, res.retries) == (3, 0)  # no failed attempt
    assert (fenced.commits, fenced.aborts) == (2, 0) and a.producer is not fenced and a.producer.commits == 1
    assert (broker.producers, broker.scans) == (3, 3)
    assert [m for _, m in broker.markers] == [0, 1, 2, 3, 4]
    assert _values(broker) == sorted(f"v{b}-{i}" for b in range(5) for i in range(3))
    checkin(a, key, ok=True)
    kept, key = checkout(cls, spec, ctx)  # the batch after: its producer, no marker read
    assert kept is a and _write(kept, 5).rows == 3 and (broker.producers, broker.scans) == (3, 3)


@pytest.fixture()
def made(broker, monkeypatch):
    """The sink's own _make_producer, its clients counted: reachability checks, reads of the topic's limit, and the
    settings of each producer made (a FakeProducer of `broker`)."""
    import confluent_kafka as ck

    from etl.components.sinks.kafka import build

    monkeypatch.undo()  # (the broker fixture's _make_producer and _scan_markers replaced again below)
    seen: dict[str, Any] = {"checks": [], "limits": [], "confs": []}  # init: the next producer's init_transactions
    monkeypatch.setattr(build.KafkaSink, "_scan_markers", lambda self: broker.last(self._marker_key()))
    monkeypatch.setattr(build, "check_reachable", lambda bootstrap, timeout, conf: seen["checks"].append(1))
    monkeypatch.setattr(build.KafkaSink, "_topic_max_message", lambda self: seen["limits"].append(1) or 1_000_000)

    def producer(conf):
        seen["confs"].append(conf)
        p = FakeProducer(broker)
        p.init_transactions, seen["init"] = seen.get("init") or (lambda timeout: None), None
        return p

    monkeypatch.setattr(ck, "Producer", producer)
    return seen


def test_kafka_moved_partition_makes_its_producer_anew_without_checking_the_broker_again(made, broker):
    """A partition back on the worker that wrote it before (partition 0's batches 2 and 3 went to worker B): its
    producer is made anew (init_transactions fences B's) but neither the reachability check nor the topic's limit is
    asked again; a producer dropped after an error is (its new one is checked as the first was)."""
    cls, spec, ctx = _kafka()
    a, b = _moved_away(cls, spec, ctx)
    assert (broker.producers, len(made["checks"]), len(made["limits"])) == (2, 2, 2)
    a2, key = checkout(cls, spec, ctx)
    assert a2 is a and _write(a, 4).rows == 3
    assert (broker.producers, len(made["checks"]), len(made["limits"])) == (3, 2, 2)
    assert a.producer.epoch == broker.epoch and a._limit == 1_000_000
    # b, given batch 5 after a fenced it: made anew without checks too; then fenced in the middle of batch 6 (a
    # took the partition again): the producer dropped on its error, the next one checked
    assert _write(b, 5).rows == 3 and (broker.producers, len(made["checks"])) == (4, 2)
    a._drop_producer(moved=True)
    a._producer()
    res = _write(b, 6)  # fenced at produce: dropped, checked, made anew, markers read: not there, written
    assert (res.rows, res.retries) == (3, 1) and (broker.producers, len(made["checks"]), len(made["limits"])) == \
        (6, 3, 3)
    assert [m for _, m in broker.markers] == [0, 1, 2, 3, 4, 5, 6]
    assert _values(broker) == sorted(f"v{n}-{i}" for n in range(7) for i in range(3))
    # batch 7 on a third worker; batch 8 back on b, whose producer made anew fails init_transactions (the broker
    # went down): the producer after it is checked first
    import confluent_kafka as ck

    assert _write(cls(spec, ctx), 7).rows == 3 and len(made["checks"]) == 4

    def down(timeout):
        raise ck.KafkaException(ck.KafkaError(ck.KafkaError._TIMED_OUT, "init_transactions timed out"))

    made["init"] = down
    assert _write(b, 8).rows == 3 and (broker.producers, len(made["checks"])) == (9, 5)
    assert [m for _, m in broker.markers] == list(range(9))


def test_kafka_sink_clients_connect_to_every_broker_unless_the_options_say(made, broker):
    """enable.sparse.connections off: a new producer's init_transactions found its coordinator unconnected and
    waited librdkafka's 500 ms timer about one time in two (see _client_conf); the options still decide."""
    cls, spec, ctx = _kafka()
    assert _write(cls(spec, ctx), 0).rows == 3
    assert made["confs"][-1]["enable.sparse.connections"] is False
    assert made["confs"][-1]["transactional.id"] == "etl.p.out.p0"
    spec = spec.model_copy(update={"options": {"enable.sparse.connections": "true"}})
    assert _write(cls(spec, ctx), 1).rows == 3
    assert made["confs"][-1]["enable.sparse.connections"] == "true"


class MarkerLog:
    """The marker topic as a read_committed consumer of confluent-kafka sees it: records (offset, key, batch) below
    the last stable offset `stable`, which is also its high watermark (librdkafka's ListOffsets asks with the
    consumer's isolation level); the log's own end `high` may be above it (a transaction still open). Each
    consumer's assign offset is recorded."""

    def __init__(self, ck):
        self.ck, self.records, self.stable, self.high, self.assigned = ck, [], 0, 0, []

    def add(self, key: bytes, batch: int, committed: bool = True) -> None:
        self.records.append((self.high, key, batch, committed))
        self.high += 2  # the record and its transaction's control record
        if committed:
            self.stable = self.high

    def consumer(self, conf):
        log = self

        class Msg:
            def __init__(self, offset, key=None, value=None, eof=False):
                self._o, self._k, self._v, self._eof = offset, key, value, eof

            def error(self):
                return log.ck.KafkaError(log.ck.KafkaError._PARTITION_EOF) if self._eof else None

            def offset(self):
                return self._o

            def key(self):
                return self._k

            def value(self):
                return self._v

        class Consumer:
            def get_watermark_offsets(self, tp, timeout):
                return 0, log.stable

            def assign(self, tps):
                log.assigned.append(tps[0].offset)
                self.pending = [Msg(o, k, json.dumps({"batch": b}).encode()) for o, k, b, ok in log.records
                                if tps[0].offset <= o < log.stable and ok] + [Msg(log.stable, eof=True)]

            def poll(self, timeout):
                return self.pending.pop(0) if self.pending else None

            def close(self):
                pass

        return Consumer()


def test_kafka_marker_scan_reads_on_from_where_the_last_one_ended(monkeypatch):
    """A kept sink's scan after its partition moved (or its producer broke) reads the markers written since its last
    scan, not the marker topic from its start: the read_committed read stopped at the last stable offset, below which
    every committed record was delivered, and markers are never rewritten. A sink made anew reads it whole."""
    import confluent_kafka as ck

    from etl.components.sinks.kafka.build import KafkaSink

    log = MarkerLog(ck)
    monkeypatch.setattr(ck, "Consumer", log.consumer)
    monkeypatch.setattr(KafkaSink, "_ensure_marker_topic", lambda self: None)
    _, spec, ctx = _kafka()
    mine, other = b"p/out/q.p0/r1", b"p/out/q.p1/r1"
    for b in range(3):
        log.add(mine, b)
        log.add(other, b)
    sink = KafkaSink(spec, ctx)
    assert sink._scan_markers() == 2 and log.assigned == [0]
    assert sink._scan_markers() == 2 and log.assigned == [0]  # nothing written since: no read
    log.add(other, 3)
    log.add(mine, 4, committed=False)  # aborted: never read
    log.add(mine, 3)
    assert sink._scan_markers() == 3 and log.assigned == [0, 12]
    log.add(other, 4)
    log.add(mine, 5, committed=False)
    log.high += 2  # another partition's transaction still open: the read stops at the last stable offset ...
    assert sink._scan_markers() == 3 and log.assigned == [0, 12, 18]
    log.add(mine, 5)  # ... and the next one reads on from there
    assert sink._scan_markers() == 5 and log.assigned == [0, 12, 18, 20]
    assert KafkaSink(spec, ctx)._scan_markers() == 5 and log.assigned[-1] == 0  # a new sink: the whole topic
    log.records, log.high, log.stable = [(0, mine, 0, True)], 2, 2  # the topic made anew: read whole again
    assert sink._scan_markers() == 0 and log.assigned[-1] == 0


def _committed_values(bootstrap: str, topic: str) -> list[str]:
    """What a read_committed consumer of the topic (one partition) reads, to its end."""
    import confluent_kafka as ck

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "isolation.level": "read_committed",
                     "enable.partition.eof": True, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        out: list[str] = []
        for _ in range(200):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                assert m.error().code() == ck.KafkaError._PARTITION_EOF, m.error()
                return out
            out.append(m.value().decode())
        raise AssertionError(f"{topic}: no end within 100 s")
    finally:
        c.close()


@pytest.mark.servers("kafka_server")
def test_kafka_kept_producer_fenced_by_another_worker_writes_every_batch_once(kafka_server, tmp_path, caplog):
    """A real broker: worker A's kept sink wrote batch 0; batch 1 ran on worker B (its producer fenced A's); batch 1
    is replayed on A. confluent-kafka reports A's fenced producer as 'KafkaSink._on_delivery returned a result with
    an exception set' (SystemError from the fatal _FENCED error, KafkaSink._lost): A drops its producer, produces the
    batch again on a new one, finds batch 1 in the markers and aborts. Then B's kept sink, given batch 3 after A
    wrote 2, makes its producer anew before writing (no failed attempt). Every batch is in the topic once."""
    from etl.components.sinks.kafka.build import KafkaSink

    spec = registry.lookup("sink", "kafka").spec.model_validate(
        {"id": "out", "inputs": ["x"], "type": "kafka", "bootstrap_servers": kafka_server.bootstrap_servers,
         "topic": "fenced", "retry": {"max_attempts": 3, "initial_backoff": "0s"}})
    ctx = SinkContext("p", "out", "q.p0", str(tmp_path / "ckpt"), str(tmp_path), partition=0, run="r1",
                      sleep=lambda s: None)
    a, b = KafkaSink(spec, ctx), KafkaSink(spec, ctx)
    try:
        assert _write(a, 0).rows == 3 and _write(b, 1).rows == 3
        with caplog.at_level("WARNING", "etl.sink"):
            assert _write(a, 1).retries == 1  # the replay: a failed attempt on the fenced producer, then aborted
        lost = [r.getMessage() for r in caplog.records if "lost in a confluent-kafka callback" in r.getMessage()]
        assert len(lost) == 1 and "fenced by a newer instance" in lost[0], caplog.text
        assert a._last == 1
        assert _write(a, 2).rows == 3
        res = _write(b, 3)
        assert (res.rows, res.retries) == (3, 0)
        assert sorted(_committed_values(kafka_server.bootstrap_servers, "fenced")) == sorted(
            f"v{n}-{i}" for n in range(4) for i in range(3))
        markers = [json.loads(v)["batch"] for v in _committed_values(kafka_server.bootstrap_servers,
                                                                     "_etl_commits.fenced")]
        assert markers == [0, 1, 2, 3]
    finally:
        a.close()
        b.close()
