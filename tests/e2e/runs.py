"""`etl run --once` as a killable child process (the SIGKILL tests of the file and rocketmq sources)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path


def start(work: Path) -> subprocess.Popen:
    """Run work/pipeline.yaml in its own process group; stderr to work/stderr.log (a file, not a pipe:
    nobody reads a killed run's stderr)."""
    log = open(work / "stderr.log", "ab")  # noqa: SIM115 - the child's stderr for its whole life
    return subprocess.Popen([sys.executable, "-m", "etl", "run", "pipeline.yaml", "--once", "--quiet",
                             "--conf", "spark.ui.enabled=false"], cwd=work,
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)


def kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the whole group: driver, JVM, Python workers (and any source runner)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
