"""RocketMQ source/sink logic that needs no server: read limits, exact ranges over a fake queue
(gaps, tag filters, a broker away, retention), dedup ids, name server addresses."""

from __future__ import annotations

import pytest

from etl.connectors import rocketmq_client as rmq
from etl.components.sources.rocketmq.build import QueueRange, RocketMQStreamReader, pull_range, split_limit


def test_split_limit_spreads_the_limit_by_backlog_and_never_overshoots():
    start = {"b/0": 0, "b/1": 10, "b/2": 5, "b/3": 7}
    latest = {"b/0": 100, "b/1": 10, "b/2": 35, "b/3": 8}
    end = split_limit(start, latest, 50)
    assert sum(end[q] - start[q] for q in start) == 50
    assert all(start[q] <= end[q] <= latest[q] for q in start)
    assert end["b/1"] == 10 and end["b/0"] - 0 > end["b/2"] - 5  # bigger backlog, bigger share
    assert split_limit(start, latest, 1000) == latest  # everything fits
    assert split_limit(start, latest, 50) == end  # deterministic
    assert sum(split_limit(start, latest, 1)[q] - start[q] for q in start) == 1  # always progresses
    assert split_limit({"b/0": 3}, {}, 10) == {"b/0": 3}  # a queue gone from the route keeps its offset


class FakeQueue:
    """One queue: offsets min..max-1, with tags; answers like the broker (32 per pull at most)."""

    def __init__(self, n: int, tags=lambda o: "A", min_offset: int = 0, down: int = 0):
        self.n, self.tags, self.min, self.down = n, tags, min_offset, down
        self.namesrv = "fake:1"
        self.calls = 0

    def pull(self, topic, queue, offset, max_num=32, expr="*"):
        self.calls += 1
        if self.down > 0:
            self.down -= 1
            return rmq.PullResult(rmq.PULL_BROKER_TIMEOUT, 0, 0, 0, [])
        if offset < self.min or offset > self.n:
            return rmq.PullResult(rmq.PULL_OFFSET_ILLEGAL, self.min, self.min, self.n, [])
        if offset == self.n:
            return rmq.PullResult(rmq.PULL_NO_NEW_MSG, offset, self.min, self.n, [])
        scanned = list(range(offset, min(self.n, offset + max(max_num, 32))))  # the broker scans ahead
        hits = [o for o in scanned if expr == "*" or self.tags(o) == expr][:max_num]
        nxt = (hits[-1] + 1) if len(hits) == max_num else scanned[-1] + 1
        msgs = [rmq.Message(queue, o, f"m{o}".encode(), f"k{o}", self.tags(o), 0, 0) for o in hits]
        return rmq.PullResult(rmq.PULL_FOUND if msgs else rmq.PULL_NO_MATCHED_MSG, nxt, self.min, self.n, msgs)


Q = rmq.Queue("b", 0)


def offsets(msgs):
    return [m.offset for m in msgs]


def test_pull_range_reads_exactly_start_to_end():
    fq = FakeQueue(500)
    assert offsets(pull_range(fq, "t", Q, 0, 500)) == list(range(500))
    assert offsets(pull_range(fq, "t", Q, 37, 141)) == list(range(37, 141))
    assert offsets(pull_range(fq, "t", Q, 499, 500)) == [499]
    assert list(pull_range(fq, "t", Q, 10, 10)) == []


def test_pull_range_with_a_tag_filter_skips_gaps_and_stops_at_end():
    fq = FakeQueue(1000, tags=lambda o: "A" if o % 97 == 0 else "B")
    assert offsets(pull_range(fq, "t", Q, 0, 1000, "A")) == list(range(0, 1000, 97))
    assert offsets(pull_range(fq, "t", Q, 98, 194, "A")) == []  # 194 is excluded
    assert offsets(pull_range(fq, "t", Q, 98, 195, "A")) == [194]


def test_pull_range_waits_for_a_broker_that_comes_back_and_gives_up_after_grace():
    waits = []
    fq = FakeQueue(50, down=3)
    assert offsets(pull_range(fq, "t", Q, 0, 50, sleep=waits.append)) == list(range(50))
    assert waits == [0.2, 0.4, 0.8]
    with pytest.raises(rmq.Unavailable, match="BROKER_TIMEOUT"):
        list(pull_range(FakeQueue(50, down=10 ** 6), "t", Q, 0, 50, grace=0.0, sleep=lambda s: None))


def test_pull_range_fails_loudly_when_retention_deleted_unread_messages():
    with pytest.raises(rmq.RocketMQError, match="messages 5..19 .* deleted by the broker"):
        list(pull_range(FakeQueue(100, min_offset=20), "t", Q, 5, 60))


def test_pull_range_waits_then_fails_when_the_queue_is_shorter_than_planned():
    with pytest.raises(rmq.Unavailable, match="queue ends at 10"):
        list(pull_range(FakeQueue(10), "t", Q, 0, 20, grace=0.0, sleep=lambda s: None))


class Reader(RocketMQStreamReader):
    """The stream reader with a scripted broker: bounds per call."""

    def __init__(self, script, **opts):
        import json

        super().__init__({"spec": json.dumps({"id": "m", "namesrv": "x:1", "topic": "t", "group": "g", **opts})})
        self.script = list(script)

    def _bounds(self):
        b = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(b, Exception):
            raise b
        return b


def test_reader_offsets_new_queues_limits_and_available_now():
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    r = Reader([{"b/0": (0, 10), "b/1": (0, 0)}], starting="earliest", max_messages_per_trigger=4)
    start = r.initialOffset()
    assert start == {"topic": "t", "queues": {"b/0": 0, "b/1": 0}}
    assert r.getDefaultReadLimit() == ReadMaxRows(4)
    end = r.latestOffset(start, ReadMaxRows(4))
    assert end["queues"] == {"b/0": 4, "b/1": 0}
    assert [(p.queue, p.start, p.end) for p in r.partitions(start, end)] == [("b/0", 0, 4)]
    # a queue appears: first registered at its earliest offset (an empty range), then read
    r.script = [{"b/0": (0, 10), "b/1": (0, 0), "b/2": (3, 9)}]
    reg = r.latestOffset(end, ReadAllAvailable())
    assert reg["queues"] == {"b/0": 4, "b/1": 0, "b/2": 3} and r.partitions(end, reg) == []
    nxt = r.latestOffset(reg, ReadAllAvailable())
    assert nxt["queues"] == {"b/0": 10, "b/1": 0, "b/2": 9}
    # the broker away: no new data (start returned), the query lives on
    r.script = [rmq.Unavailable("down")]
    assert r.latestOffset(nxt, ReadAllAvailable()) == nxt
    # AvailableNow: the target is fixed when the run starts
    r2 = Reader([{"b/0": (0, 10)}, {"b/0": (0, 99)}], starting="latest")
    s2 = r2.initialOffset()
    assert s2["queues"] == {"b/0": 10}
    r2.prepareForTriggerAvailableNow()  # the target: what is there when the run starts
    r2.script = [{"b/0": (0, 500)}]
    assert r2.latestOffset(s2, ReadAllAvailable())["queues"] == {"b/0": 99}  # later messages wait
    with pytest.raises(ValueError, match="offsets of topic 'other'"):
        r2.latestOffset({"topic": "other", "queues": {}}, ReadAllAvailable())


def test_queue_ranges_pickle():
    import pickle

    p = pickle.loads(pickle.dumps(QueueRange("broker-a/3", 5, 9)))
    assert (p.queue, p.start, p.end) == ("broker-a/3", 5, 9)
    assert rmq.Queue.from_key("broker/with/slash/2") == rmq.Queue("broker/with/slash", 2)


def test_namesrv_addresses_and_lenient_route_json():
    assert rmq.parse_namesrv("a:1;b:2") == [("a", 1), ("b", 2)]
    for bad in ("", "a", "a:x", "a:0", ":9876"):
        with pytest.raises(ValueError):
            rmq.parse_namesrv(bad)
    route = rmq._lenient_json(b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:1"},"brokerName":"b"}],'
                              b'"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4}]}')
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:1"}
    assert isinstance(rmq.classify_send_error("the message body is empty", "t"), rmq.Rejected)
    assert isinstance(rmq.classify_send_error("No route info of this topic: t", "t"), rmq.Unavailable)
    assert isinstance(rmq.classify_send_error("send timeout", "t"), rmq.Unavailable)


def test_sink_message_ids_are_deterministic_and_repeats_numbered(tmp_path):
    from etl.components.sinks.rocketmq.build import RocketMQSink
    from etl.runtime.sink import SinkContext
    from etl.components.sinks.rocketmq.spec import RocketMQSink as Spec

    spec = Spec(id="out", type="rocketmq", inputs=["x"], namesrv="127.0.0.1:1", topic="t")
    ctx = SinkContext("p", "out", "q", str(tmp_path), str(tmp_path))
    a, b = RocketMQSink(spec, ctx), RocketMQSink(spec, ctx)
    a._prefix = b._prefix = "p:out:q:0:7:"
    keys, bodies = ["k1", None, "k1", "k1"], ['{"a":1}', '{"a":1}', '{"a":1}', '{"a":2}']
    ids = a.message_ids(keys, bodies)
    assert len(set(ids)) == 4 and ids[2] == ids[0] + "#2" and all(i.startswith("p:out:q:0:7:") for i in ids)
    # the same rows in another order (a replay): the same set of ids
    assert sorted(b.message_ids(keys[::-1], bodies[::-1])) == sorted(ids)
