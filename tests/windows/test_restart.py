"""Durable state: a windowed + joined app killed with SIGKILL mid-run and restarted produces
exactly the results of an uninterrupted run.

The uninterrupted results are the oracle's (test_window_oracle.py and test_join.py show that
an uninterrupted run equals the oracle on these inputs); the restarted run must equal them
too: no window lost, none emitted twice, join state (RocksDB) carried over the crash.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.windows.batches_source import write_batches
from tests.windows import oracle
from tests.windows.data import make_batches
from tests.windows.harness import assert_rows_equal
from tests.windows.join_data import WITHIN_S, make_streams, oracle_join
from tests.windows.test_window_oracle import DELAY_S, KINDS, make_spec

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
QUERIES = ("windows", "join")


def commits(work: Path, name: str) -> int:
    d = work / "ck" / name / "commits"
    return len([f for f in d.iterdir() if f.name.isdigit()]) if d.is_dir() else 0


def start(work: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.windows.restart_driver", str(work), "--trigger-ms", "400"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def read_out(spark, work: Path, name: str) -> list[dict]:
    path = work / "out" / name
    if not (path / "_spark_metadata").exists():
        return []
    return [r.asDict(recursive=True) for r in spark.read.json(str(path)).collect()]


def failure(stderr: str) -> str:
    """The lines naming the error (a streaming query's message is followed by its whole plan), then the tail."""
    named = [line for line in stderr.splitlines() if "Exception" in line or "Error" in line or "Caused by" in line]
    return "\n".join(named[:30])[:6000] + "\n...\n" + stderr[-2000:]


def test_kill_and_restart(spark, tmp_path):
    batches = make_batches(n_batches=6)
    left, right = make_streams()
    write_batches(tmp_path / "windows.json", batches)
    (tmp_path / "left.json").write_text(json.dumps(left))
    (tmp_path / "right.json").write_text(json.dumps(right))

    p = start(tmp_path)
    deadline = time.time() + 600
    while time.time() < deadline and min(commits(tmp_path, q) for q in QUERIES) < 2:
        if p.poll() is not None:
            pytest.fail("the app ended before it was killed:\n" + p.stderr.read().decode()[-3000:])
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    at_kill = {q: commits(tmp_path, q) for q in QUERIES}
    total = {"windows": len(batches), "join": len(left)}  # input batches per query (one per trigger)
    assert all(2 <= n < total[q] for q, n in at_kill.items()), at_kill  # killed mid-run

    p = start(tmp_path)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, failure(err.decode())

    rows = read_out(spark, tmp_path, "windows")
    for kind in KINDS:
        got = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows if r["_variant"] == kind]
        want = oracle.simulate(batches, make_spec(kind), delay_ms=DELAY_S * 1000, rule="previous").final
        assert_rows_equal(got, want, approx=("acd_s",))

    for kind in KINDS:
        mine = [r for r in rows if r["_variant"] == "state-" + kind]
        want = oracle.simulate(batches, make_spec(kind), delay_ms=DELAY_S * 1000, rule="current")
        results = [{k: v for k, v in r.items() if not k.startswith("_")} for r in mine if r.get("_etl_err") is None]
        assert_rows_equal(results, want.final)
        late = [json.loads(r["_etl_payload"]) for r in mine if r.get("_etl_err") is not None]
        assert_rows_equal([{k: p.get(k) for k in ("k", "v", "x", "s", "ts")} for p in late], want.late)

    got = read_out(spark, tmp_path, "join")
    assert_rows_equal(got, oracle_join(left, right, "left", WITHIN_S * 1000))
