"""The run's log file, redacted as it is written: what the JVM writes there passes etl's redaction first.

The JVM writes the run's log three ways: log4j's run-log appender (-Detl.runlog), its System.err (etl.runtime.
session.stderr_to_file) and its file descriptor 2, which it and the Python daemons it starts inherit (etl.commands.
run.jvm_stderr_to). None of them is Python's, so each is given a named pipe (FIFO) beside the log instead of the
log: a thread of `etl run` reads it, redacts each line (etl.secrets.redact: env() values, URL passwords) and
appends it to the log, until `etl run` has stopped the JVM and every writer has closed the FIFO (what the JVM writes
while it exits, its shutdown hooks' lines, is in the log too). Nothing unredacted reaches the disk at any time: a run ended by SIGKILL leaves a log
without its secrets (before, the log was rewritten redacted when the run ended). Where no FIFO can be made (no
os.mkfifo), the JVM writes the log itself and `close()` rewrites it redacted.

The FIFO is named after the log and the run's process id (`.etl-run-<time>.log.<pid>.pipe`): a run ended by SIGKILL
cannot remove it, so each run removes, before making its own, the FIFOs in its log folder whose process is gone (the
runs of other pipelines sharing the folder, still going, keep theirs).
"""

from __future__ import annotations

import errno
import os
import select
import stat
import threading
from pathlib import Path

from etl.runtime.failure import redact_log
from etl.secrets import redact

CHUNK = 1 << 16
LONGEST = 1 << 20  # a line longer than this is redacted and written in pieces of this size


class RunLog:
    """`target` is where the JVM writes (the FIFO, else the log); `close()` drains it into the log."""

    def __init__(self, log: Path):
        self.log = log
        self.target = str(log)
        self._fifo: Path | None = None
        self._read = self._keep = -1
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            remove_stale(log.parent)
            fifo = log.with_name(f".{log.name}.{os.getpid()}.pipe")
            os.mkfifo(fifo, 0o600)
            self._fifo = fifo
            self._read = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            self._keep = os.open(fifo, os.O_WRONLY)  # no end of file while the JVM's writers come and go
            self._out = open(log, "ab")  # noqa: SIM115 - open for the run, closed by close()
        except (OSError, AttributeError):  # AttributeError: no os.mkfifo (Windows)
            self._close_fds()
            self._fifo = None
            return
        self.target = str(fifo)
        self._thread = threading.Thread(target=self._pump, name="etl-runlog", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        rest = b""
        while True:
            ready = select.select([self._read], [], [], 0.2)[0]
            chunk = b""
            if ready:
                try:
                    chunk = os.read(self._read, CHUNK)
                except BlockingIOError:
                    ready = []
                if ready and not chunk:  # the end of file: every writer has closed the FIFO (after close(wait))
                    break
            if not chunk:
                if self._stop.is_set():
                    break
                continue
            rest += chunk
            end = rest.rfind(b"\n") + 1
            if not end and len(rest) >= LONGEST:
                end = len(rest)
            if end:
                self._write(rest[:end])
                rest = rest[end:]
        if rest:
            self._write(rest)

    def _write(self, data: bytes) -> None:
        self._out.write((redact(data.decode("utf-8", "replace")) or "").encode("utf-8"))
        self._out.flush()

    def close(self, wait_s: float = 0.0) -> None:
        """Everything written so far is in the log; with `wait_s`, also what the writers still write until the last
        has closed the FIFO (the JVM and the Python daemons it started have exited) or `wait_s` has passed; then the
        FIFO is gone (writers still holding it get EPIPE)."""
        if self._thread is None:
            redact_log(self.log)
            return
        if wait_s > 0 and self._keep >= 0:
            os.close(self._keep)  # the pump reads to the end of file: when no writer is left
            self._keep = -1
            self._thread.join(wait_s)
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._out.close()
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._read, self._keep):
            if fd >= 0:
                os.close(fd)
        self._read = self._keep = -1
        if self._fifo is not None:
            self._fifo.unlink(missing_ok=True)


def remove_stale(folder: Path) -> list[str]:
    """Remove the run-log FIFOs in `folder` no running process holds (a run ended by SIGKILL left them); the names
    removed."""
    gone = []
    for fifo in sorted(folder.glob(".etl-run-*.pipe")):
        try:
            if stat.S_ISFIFO(fifo.lstat().st_mode) and not _in_use(fifo):
                fifo.unlink()
                gone.append(fifo.name)
        except FileNotFoundError:  # another run removed it first
            pass
    return gone


def _in_use(fifo: Path) -> bool:
    """Whether the run that made `fifo` may still be going: its process (the pid in its name) exists; a FIFO named
    without one (an etl before it named them so) is in use while a process has it open for reading."""
    pid = fifo.name[: -len(".pipe")].rpartition(".")[2]
    if pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process
            return True
        return True
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: nobody reads it
    except OSError as e:
        return e.errno != errno.ENXIO
    os.close(fd)
    return True
