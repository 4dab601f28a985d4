"""Exactly once end to end with real servers: Kafka -> filter -> tumbling window -> MySQL (insert
mode, no key: a replayed batch would show as doubled rows). `etl run --once` is SIGKILLed (the
whole process group: driver, JVM, Python workers) at random moments 5 times -- while Spark starts,
between batches, inside the sink's MySQL transaction -- and restarted each time; the last run
finishes. The MySQL table must equal the oracle exactly: every closed window once, nothing more.

Set ETL_E2E_SEED to replay a sequence of kill moments; ETL_E2E_KILLS to kill more runs (3 by default).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from datetime import datetime, timedelta, UTC
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.contract.harness import assert_no_loss_or_doubles  # noqa: E402
from tests.e2e.runs import kill_group  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

# driver runs killed before the one that finishes (each run is a new driver JVM: about 12 s of CPU); a soak run
# sets more: ETL_E2E_KILLS=20
KILLS = int(os.environ.get("ETL_E2E_KILLS", "3"))
EVENTS = 6000
WINDOW_S = 30
WATERMARK_S = 5
SERVICES = ["api", "web", "batch"]

PIPELINE = """\
name: eo-{suffix}
sources:
  - id: requests
    type: kafka
    bootstrap_servers: '{{{{ env("KAFKA_BOOTSTRAP") }}}}'
    topics: [{topic}]
    schema: {{ts: timestamp, service: string, status: int, latency_ms: bigint}}
    event_time: {{field: ts, watermark: {watermark}s}}
    max_offsets_per_trigger: 500
transforms:
  - {{id: ok, type: filter, input: requests, expr: "status < 500"}}
  - id: per_window
    type: window
    input: ok
    kind: tumbling
    size: {window}s
    group_by: [service]
    aggregates:
      - {{fn: count, as: requests}}
      - {{fn: sum, field: latency_ms, as: total_ms}}
      - {{fn: max, field: latency_ms, as: max_ms}}
sinks:
  - id: stats
    type: mysql
    input: per_window
    host: '{{{{ env("MYSQL_HOST") }}}}'
    port: '{{{{ env("MYSQL_PORT") }}}}'
    database: '{{{{ env("MYSQL_DATABASE") }}}}'
    user: '{{{{ env("MYSQL_USER") }}}}'
    password: '{{{{ env("MYSQL_PASSWORD") }}}}'
    table: {table}
    mode: insert
    create_table: true
    batch_size: 7
checkpoint: state/checkpoint
"""


def events(n: int, seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    t0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)
    return [{"ts": (t0 + timedelta(milliseconds=100 * i)).isoformat().replace("+00:00", "Z"),
             "service": rng.choice(SERVICES), "status": rng.choice([200, 200, 204, 404, 500, 503]),
             "latency_ms": rng.randint(1, 2000)} for i in range(n)]


def oracle(evs: list[dict]) -> Counter:
    def ts(e):
        return datetime.fromisoformat(e["ts"].replace("Z", "+00:00"))

    watermark = max(ts(e) for e in evs) - timedelta(seconds=WATERMARK_S)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for e in evs:
        if e["status"] < 500:
            t = ts(e)
            start = t - timedelta(seconds=t.timestamp() % WINDOW_S)
            groups[(e["service"], start)].append(e["latency_ms"])
    return Counter((svc, start.replace(tzinfo=None), len(v), sum(v), max(v)) for (svc, start), v in groups.items()
                   if start + timedelta(seconds=WINDOW_S) <= watermark)


class Run:
    """`etl run --once --progress json` in its own process group; counts finished batches from stderr."""

    def __init__(self, work: Path, env: dict[str, str]):
        self.batches = 0
        self.lines: list[str] = []
        # the same --conf on every run: shuffle partitions are recorded in the checkpoint
        self.p = subprocess.Popen([sys.executable, "-m", "etl", "run", "pipeline.yaml", "--once", "--progress", "json",
                                   "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2",
                                   "--conf", "spark.ui.enabled=false"],
                                  cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  start_new_session=True, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.p.stderr is not None
        for line in self.p.stderr:
            self.lines.append(line)
            if line.startswith("{") and '"batch"' in line:
                self.batches += 1

    def kill(self) -> None:
        kill_group(self.p)
        self._reader.join(10)

    def failure(self) -> str:
        """The run's stderr without stack frames (a JVM StackOverflowError is thousands of them)."""
        return "".join(line for line in self.lines if not line.lstrip().startswith("at "))[-6000:]


def test_kill9_kafka_window_mysql_equals_oracle(kafka_server, mariadb_server, tmp_path):
    from confluent_kafka import Producer

    seed = int(os.environ.get("ETL_E2E_SEED", random.randrange(1 << 30)))
    rnd = random.Random(seed)
    suffix = uuid.uuid4().hex[:8]
    topic, table = f"eo_{suffix}", f"eo_{suffix}"
    kafka_server.create_topic(topic, partitions=3)
    evs = events(EVENTS)
    p = Producer({"bootstrap.servers": kafka_server.bootstrap_servers, "linger.ms": 5})
    for e in evs:
        p.produce(topic, key=e["service"], value=json.dumps(e))
    assert p.flush(60) == 0
    (tmp_path / "pipeline.yaml").write_text(PIPELINE.format(suffix=suffix, topic=topic, table=table,
                                                            window=WINDOW_S, watermark=WATERMARK_S))
    m = mariadb_server
    env = {**os.environ, "KAFKA_BOOTSTRAP": kafka_server.bootstrap_servers, "MYSQL_HOST": m.host,
           "MYSQL_PORT": str(m.port), "MYSQL_DATABASE": m.database, "MYSQL_USER": m.user,
           "MYSQL_PASSWORD": m.password, "PYTHONPATH": str(REPO)}
    kills = []
    for k in range(KILLS):
        run = Run(tmp_path, env)
        if k == 0:  # while the JVM starts or plans the first batch
            time.sleep(rnd.uniform(2.0, 8.0))
        else:  # mid-stream: after a batch or two of this run, at a random moment (often inside a transaction)
            target = rnd.randint(1, 2)
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and run.p.poll() is None and run.batches < target:
                time.sleep(0.05)
            time.sleep(rnd.uniform(0.0, 1.2))
        finished = run.p.poll() is not None
        run.kill()
        kills.append((k, run.batches, finished))
        if finished:
            assert run.p.returncode == 0, f"seed {seed}, kills {kills}: run {k} failed:\n{run.failure()}"
            break
    assert sum(1 for *_, fin in kills if not fin) >= KILLS, f"runs ended before their kill: {kills} (seed {seed})"
    last = Run(tmp_path, env)
    assert last.p.wait(timeout=600) == 0, f"seed {seed}, kills {kills}:\n{last.failure()}"
    last._reader.join(10)
    conn = m.connect()
    with conn.cursor() as cur:
        cur.execute(f"SELECT service, window_start, requests, total_ms, max_ms FROM `{table}`")
        got = Counter((r[0], r[1], int(r[2]), int(r[3]), int(r[4])) for r in cur.fetchall())
        cur.execute("SELECT COUNT(*) FROM _etl_commits WHERE pipeline = %s", (f"eo-{suffix}",))
        markers = cur.fetchone()[0]
    conn.close()
    want = oracle(evs)
    assert_no_loss_or_doubles(got, want, f"seed {seed}, kills {kills}, {markers} batches committed", show=3)
    assert got == want
    print(f"\n[exactly-once] seed {seed}: kills (run, batches done, finished) {kills}; {sum(want.values())} "
          f"windows, {markers} committed batches")
