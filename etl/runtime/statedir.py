"""The state folder of a run is private, one run at a time, and names the pipeline it belongs to.

* Private: `etl run` (and `etl drain`) create every file with umask 077 (files 0600, folders 0700): its own
  (run file, control token, run log, drain files, dead letters) and the JVM's (it inherits the umask; Hadoop's
  local file system applies its own, `fs.permissions.umask-mode`, set to the same by HADOOP_UMASK). The
  folders etl owns that an older run may have left open (the checkpoint, the logs) are closed at start.
* One run per checkpoint: `lock` takes an exclusive `flock` on `<checkpoint>/_etl_run.lock` (the kernel
  releases it when the process dies, SIGKILL included) and writes its pid there; a second run is refused
  up front (CheckpointInUse), before it writes anything.
* Its pipeline: `<checkpoint>/_etl_pipeline.json` records the pipeline's name; a run of another
  pipeline on that checkpoint is refused (ForeignCheckpoint) instead of failing inside Spark.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
from pathlib import Path
from typing import Any
from collections.abc import Iterator

UMASK = 0o077
HADOOP_UMASK = {"spark.hadoop.fs.permissions.umask-mode": "077"}
LOCK = "_etl_run.lock"
IDENTITY = "_etl_pipeline.json"


class CheckpointInUse(RuntimeError):
    def __init__(self, checkpoint: str, pid: int | None):
        super().__init__(f"checkpoint {checkpoint} is in use by a running `etl run` (pid {pid or '?'})")
        self.pid = pid


class ForeignCheckpoint(RuntimeError):
    def __init__(self, checkpoint: str, owner: str):
        super().__init__(f"checkpoint {checkpoint} belongs to pipeline '{owner}'")
        self.owner = owner


@contextlib.contextmanager
def private() -> Iterator[None]:
    """While it lasts, this process (and the JVM it starts) creates files 0600 and folders 0700."""
    before = os.umask(UMASK)
    try:
        yield
    finally:
        os.umask(before)


def close(*folders: str | Path) -> None:
    """Folders etl owns, created 0700, or closed to 0700 when an older run left them open."""
    for f in folders:
        p = Path(f)
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
        if p.stat().st_mode & 0o077:
            os.chmod(p, 0o700)


def write_private(path: Path, text: str) -> None:
    """`path` holds `text` whole (temporary file + rename), readable by its owner only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)  # an older file of that name kept its mode through O_TRUNC
    os.replace(tmp, path)


def lock(checkpoint: str) -> int:
    """Hold `checkpoint` for this process (the descriptor stays open until it exits); CheckpointInUse when
    another process holds it."""
    close(checkpoint)
    path = Path(checkpoint) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            pid: int | None = int(os.read(fd, 32).decode().strip() or 0) or None
        except (OSError, ValueError):
            pid = None
        os.close(fd)
        raise CheckpointInUse(checkpoint, pid) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def claim(checkpoint: str, pipeline: str) -> None:
    """Record the pipeline in its checkpoint (a checkpoint older than the record is adopted), or refuse a
    checkpoint another pipeline recorded."""
    path = Path(checkpoint) / IDENTITY
    try:
        owner: dict[str, Any] | None = json.loads(path.read_text())
    except FileNotFoundError:
        owner = None
    except (OSError, ValueError):
        owner = {}  # unreadable: rewritten below
    if owner and owner.get("pipeline") != pipeline:
        raise ForeignCheckpoint(checkpoint, str(owner.get("pipeline")))
    if not owner:
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        write_private(path, json.dumps({"pipeline": pipeline, "since": now}) + "\n")
