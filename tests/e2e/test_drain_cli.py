"""`etl run` drained by SIGUSR1: the CLI process finishes its batch, flushes every window, records the drain and
exits 0; `etl run --drain` on that checkpoint is then refused with E408 and a hint, on one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

PIPE = """
name: drain-cli
sources:
  - id: gen
    type: generator
    count: 300
    rate: 100
    start_time: "2026-01-01T00:00:00Z"
    fields: {ts: {timestamp: event}, k: {choice: [a, b]}}
    event_time: {field: ts, watermark: 1s}
transforms:
  - {id: w, type: window, input: gen, kind: tumbling, size: 1m, group_by: [k], aggregates: [{fn: count, as: n}]}
sinks:
  - {id: out, type: file, input: w, path: out, format: jsonl}
checkpoint: ck
trigger: {mode: interval, interval: 300ms}
"""


def etl(work: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "etl", *args], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_sigusr1_drains_a_running_pipeline(tmp_path):
    (tmp_path / "p.yaml").write_text(textwrap.dedent(PIPE))
    p = etl(tmp_path, "run", "p.yaml", "--quiet", "--conf", "spark.ui.enabled=false", "--conf",
            "spark.sql.shuffle.partitions=2")  # as in the shared session (etl run's default: 4 state stores)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (tmp_path / "ck" / "w" / "commits" / "1").exists():
        assert p.poll() is None, p.communicate()[1][-3000:]
        time.sleep(0.2)
    p.send_signal(signal.SIGUSR1)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
    rows = [json.loads(line) for f in (tmp_path / "out").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert sum(r["n"] for r in rows) == 300  # the 1 m window closed only because of the drain
    assert json.loads((tmp_path / "ck" / "_etl_drained.json").read_text())["how"] == "SIGUSR1"

    p = etl(tmp_path, "run", "p.yaml", "--drain", "--quiet")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 1
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[0].startswith(f"p.yaml:12:5: E408 checkpoint {tmp_path / 'ck'} was drained (SIGUSR1, ")
    assert lines[1].strip().startswith("hint: run over new data with a new checkpoint")
