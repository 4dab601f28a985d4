"""One `etl run` per checkpoint, of its own pipeline (etl/runtime/statedir.py), refused before anything starts
(no JVM here): a second run is one E410 line naming the running pid, and the live run's run file stays; the lock
goes with its process, SIGKILL included; another pipeline's checkpoint is one E413 line; an older checkpoint
without the record is adopted."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from etl.runtime import statedir

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = """\
name: p
sources: [{id: s, type: file, path: in, format: text}]
sinks: [{id: o, type: print, input: s}]
checkpoint: state/checkpoint
"""
HOLD = "import sys, time; from etl.runtime import statedir; statedir.lock(sys.argv[1]); print('held', flush=True); " \
       "time.sleep(600)"


def etl_run(work: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml", "--once"], cwd=work, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "ETL_NO_SPARK": "on"})


@pytest.fixture
def work(tmp_path):
    (tmp_path / "p.yaml").write_text(PIPELINE)
    return tmp_path


def test_a_second_run_is_refused_with_the_pid_and_a_killed_run_releases_the_checkpoint(work):
    ck = work / "state" / "checkpoint"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(ck)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline() == "held\n"
        live = json.dumps({"pipeline": "p", "address": "http://127.0.0.1:1", "pid": holder.pid})
        (work / "state" / "run.json").write_text(live)
        r = etl_run(work)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"p.yaml:4:13: E410 pipeline 'p': checkpoint {ck} is in use by a running `etl run` (pid {holder.pid})",
        f"    hint: one run per checkpoint: stop that run first (kill -TERM {holder.pid}), or give this one its "
        "own checkpoint (--checkpoint DIR)"]
    assert (work / "state" / "run.json").read_text() == live  # the live run's file is left alone
    assert stat.S_IMODE(ck.stat().st_mode) == 0o700
    fd = statedir.lock(str(ck))  # SIGKILL released it
    try:
        assert (ck / statedir.LOCK).read_text() == f"{os.getpid()}\n"
    finally:
        os.close(fd)


def test_another_pipelines_checkpoint_is_refused_and_an_unrecorded_one_adopted(work):
    ck = work / "state" / "checkpoint"
    ck.mkdir(parents=True)
    (ck / statedir.IDENTITY).write_text(json.dumps({"pipeline": "orders"}))
    r = etl_run(work)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"p.yaml:4:13: E413 pipeline 'p': checkpoint {ck} belongs to pipeline 'orders', not to 'p'",
        "    hint: give each pipeline its own checkpoint (checkpoint: or --checkpoint DIR); resuming another "
        "pipeline's offsets and state would read wrong data"]
    (ck / statedir.IDENTITY).unlink()
    with statedir.private():
        statedir.claim(str(ck), "p")
    assert json.loads((ck / statedir.IDENTITY).read_text())["pipeline"] == "p"
    assert stat.S_IMODE((ck / statedir.IDENTITY).stat().st_mode) == 0o600
    statedir.claim(str(ck), "p")  # its own: accepted
    with pytest.raises(statedir.ForeignCheckpoint, match="belongs to pipeline 'p'"):
        statedir.claim(str(ck), "q")
