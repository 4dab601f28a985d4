"""The rocketmq source under crashes: `etl run --once` reading a topic (4 queues, small batches)
into a file sink is SIGKILLed (the whole process group: driver, JVM, Python workers and the
source runner) twice mid-stream, then run to the end. The output must equal the topic's
content exactly: nothing lost, nothing doubled. Slow (JVM start per run): marked `slow`.

Set ETL_E2E_SEED to replay a sequence of kill moments.
Run: .venv/bin/python -m pytest -m servers tests/integration/test_rocketmq_crash.py
"""

from __future__ import annotations

import json
import os
import random
import sys
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.e2e.runs import kill_group, start  # noqa: E402
from tests.servers.examples import produce_rocketmq  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.slow, pytest.mark.timeout(900)]

MESSAGES = 1500
KILLS = 2


def parts(out: Path) -> int:
    return len(list(out.glob("part-*.jsonl"))) if out.exists() else 0


def test_sigkill_loop_reads_the_topic_exactly_once(rocketmq_server, tmp_path):
    seed = int(os.environ.get("ETL_E2E_SEED", random.randrange(1 << 30)))
    rnd = random.Random(seed)
    ns = rocketmq_server.namesrv_addr
    topic = f"crash_{uuid.uuid4().hex[:10]}"
    produce_rocketmq(ns, topic, [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(MESSAGES)])
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent(f"""\
        name: rmq-crash
        sources:
          - {{id: m, type: rocketmq, namesrv: "{ns}", topic: {topic}, schema: {{id: bigint, name: string}},
              max_messages_per_trigger: 250}}
        sinks:
          - {{id: out, type: file, input: m, path: output, format: jsonl}}
        checkpoint: state/checkpoint
    """))
    out = tmp_path / "output"
    kills = []
    t0 = time.monotonic()
    for k in range(KILLS):
        before = parts(out)
        proc = start(tmp_path)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None and parts(out) <= before:
            time.sleep(0.05)  # this run wrote something: kill it at a random moment soon after
        time.sleep(rnd.uniform(0.0, 2.0))
        finished = proc.poll() is not None
        kill_group(proc)
        kills.append((k, parts(out), finished, round(time.monotonic() - t0)))
    assert sum(not fin for _, _, fin, _ in kills) >= 1, f"runs ended before their kill: {kills} (seed {seed})"
    proc = start(tmp_path)
    proc.wait(timeout=600)
    assert proc.returncode == 0, (tmp_path / "stderr.log").read_text(errors="replace")[-3000:]
    rows = [json.loads(line) for f in sorted(out.glob("part-*.jsonl")) for line in f.read_text().splitlines()]
    counts = Counter(r["id"] for r in rows)
    doubled = sorted(i for i, c in counts.items() if c > 1)
    missing = sorted(set(range(MESSAGES)) - set(counts))
    assert not doubled and not missing, f"seed {seed}, kills {kills}: doubled {doubled[:10]}, missing {missing[:10]}"
    assert len(rows) == MESSAGES
    print(f"\n[rocketmq crash] seed {seed}, kills (run, part files, finished, seconds): {kills}")
