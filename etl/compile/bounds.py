"""Bounds of a pipeline's Python function calls, in the Spark Python worker that makes them (etl.compile.functions).

No call stops the stream; each bound makes its row a dead letter naming the function:

* time: a call (and its module's import) gets ETL_FUNCTION_TIMEOUT_S. A periodic real-time timer (SIGALRM)
  raises `Overtime` -- a BaseException, so the function's own `except Exception` does not swallow it -- in the
  worker's main thread, where Spark runs the calls, in a call that has run past it (within a tenth of the budget).
  A call that still does not return 5 s later (it caught even that, or it sits in C code) ends its worker with exit
  code 70, which the crash journal below turns into its dead letter.
* memory: the worker's address space (RLIMIT_AS) is limited, once per process, to what it had when it first called
  a function (pyarrow's first arena mapped before: _map_arrow) plus ETL_FUNCTION_MEMORY_MB: a call that wants more gets MemoryError (the kernel's OOM killer never
  has to choose a process, and never the JVM).
* crashes: a call that ends its worker (os._exit, a segmentation fault, a signal) fails the task; nothing in the
  worker can answer for that row. Before each call, the worker writes the call's number in the task into a
  journal (a small memory-mapped file per process and function under <tmp>/etl-fn-journal-<uid>), with the
  streaming query, batch, partition and task attempt. When the runner runs the batch again (etl.runtime.runner),
  it names the task attempts whose worker crashed (Spark's error says them; local property etl.crashed.tasks),
  and the new worker of the same task reads those attempts' journals and answers the call that was running then
  with an error instead of making it again (a worker Spark killed because another task failed is not taken for
  one that crashed). Journals are local files: on a cluster the
  retry must run on the same machine (the first retry of a task usually does), else the task fails again.

Cost per call: a clock read, the task's id and two 8-byte writes into the journal, about 0.5 µs, which RowCall
pays back by keeping the loaded callable (it hashed the module's source on every call before): 300,000 calls of a
function doing `s.upper()`, 7 alternating rounds, CPU medians: 0.89 µs a call before, 0.99 µs with the bounds (a
row through a Python function costs about 10 µs in Spark: docs/python-functions.md).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import signal
import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

GRACE_S = 5.0  # after Overtime, a call that still runs ends its worker
KILLED = 70  # the exit code of a worker ended that way
MAX_CRASHES = 20  # attempts at one batch whose Python workers crash (each finds one more crashing call)
_SLOT = struct.Struct("<qq")  # (2 * call number + 1 while in the call, + 2 after it; cause: 0 crash, 1 overtime)
HEADER = 16
SIZE = 4096


# Spark's error when a task's Python worker ended: "... Lost task 3.0 in stage 1.0 (TID 7) (localhost executor
# driver): org.apache.spark.SparkException: Python worker exited unexpectedly (crashed) ..."
CRASHED = re.compile(r"\(TID (\d+)\) \([^)]*\): org\.apache\.spark\.SparkException: Python worker exited unexpectedly")
WORKER_ENDED = "Python worker exited unexpectedly"
CRASHED_TASKS = "etl.crashed.tasks"  # local property: the task attempts whose worker crashed, for the retry


def crashed_tasks(exc: BaseException) -> set[int]:
    """The task attempts (TIDs) whose Python worker ended, as a failed job says (empty: none did)."""
    seen: set[int] = set()
    out: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out.update(int(t) for t in CRASHED.findall(str(e)))
        e = e.__cause__ or e.__context__
    return out


class Overtime(BaseException):
    """A call ran past its time budget (raised by the timer in the worker's main thread)."""


def journal_dir() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"etl-fn-journal-{uid}"


_STATE: dict[str, Any] = {}  # per process: the memory limit set, the timer handler installed


def limit_memory(mb: int) -> None:
    """RLIMIT_AS = this process's address space now + `mb`, in a Spark task's worker (once per process; a lower
    limit is kept). Elsewhere (a test calling a function, the driver) nothing is limited: a JVM started later by the
    process would inherit the limit."""
    if "memory" in _STATE:
        return
    from pyspark import TaskContext

    if TaskContext.get() is None:
        return
    _STATE["memory"] = mb
    try:
        import resource

        _map_arrow()
        with open("/proc/self/statm") as fh:
            now = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        want = now + mb * 1024 * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > want:
            resource.setrlimit(resource.RLIMIT_AS, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
    except (OSError, ValueError, ImportError):  # no /proc, no resource module: no limit (macOS, Windows)
        pass


def _map_arrow() -> None:
    """When this worker has pyarrow (a pandas UDF's worker), its allocator (mimalloc) maps its first arena, about
    1 GB of address space, at its first allocation: made here, before the limit is measured, it is the worker's and
    not the function's (after the limit, with ETL_FUNCTION_MEMORY_MB at 1024 or less, the arena did not fit and
    Arrow failed: "malloc of size 64 failed")."""
    import sys

    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.allocate_buffer(64)


class Timer:
    """The time budget of the calls of this process: a periodic SIGALRM (every tenth of the budget, at most every
    second; system calls restart) whose handler raises Overtime in the call that has run past the budget, and ends
    the worker when that call still runs GRACE_S later. A call costs two attribute writes and a clock read."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.start = 0.0  # when the current call started
        self.active = False  # a call is running
        self.fired = -1.0  # the start of the call Overtime was raised in
        self.on_kill: Any = None
        tick = min(1.0, seconds / 10)
        signal.signal(signal.SIGALRM, self)
        signal.siginterrupt(signal.SIGALRM, False)
        signal.setitimer(signal.ITIMER_REAL, tick, tick)

    def __call__(self, signum: int, frame: Any) -> None:
        if not self.active:
            return
        late = time.monotonic() - self.start
        if self.fired != self.start:
            if late >= self.seconds:
                self.fired = self.start
                raise Overtime()
        elif late >= self.seconds + GRACE_S:
            if self.on_kill is not None:
                self.on_kill()
            os._exit(KILLED)


def timer(seconds: float) -> Timer | None:
    """The process's timer (None: not a Spark task's worker, not its main thread, or no interval timers here)."""
    from pyspark import TaskContext

    if "timer" not in _STATE:
        t = None
        if (TaskContext.get() is not None and threading.current_thread() is threading.main_thread()
                and hasattr(signal, "setitimer")):
            t = Timer(seconds)
        _STATE["timer"] = t
    found: Timer | None = _STATE["timer"]
    if found is not None:
        found.seconds = seconds
    return found


def stop_timer() -> None:
    """No more alarms in this process (tests: the timer of a fake task)."""
    t = _STATE.pop("timer", None)
    if t is not None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def journal(fn: str) -> Journal:
    """This process's journal of the function `fn` (one for all its call sites: their calls are counted in order)."""
    journals: dict[str, Journal] = _STATE.setdefault("journals", {})
    if fn not in journals:
        journals[fn] = Journal(fn)
    return journals[fn]


class Journal:
    """The calls of one function in this process: the call being made, per task (see the module docstring)."""

    def __init__(self, fn: str):
        from pyspark import TaskContext

        self.fn = fn
        self.context = TaskContext
        self.task: Any = None  # the task attempt the counts are of
        self.n = 0  # calls in this task
        self.poison: dict[int, int] = {}  # call number -> cause, from dead workers of this task
        self.mm: mmap.mmap | None = None

    def begin(self) -> int:
        """Before a call: its number in the task (the journal says it is running)."""
        tc = self.context.get()
        if tc is None or tc.taskAttemptId() != self.task:
            self._new_task(tc)
        i = self.n
        self.n += 1
        if self.mm is not None:
            _SLOT.pack_into(self.mm, 0, 2 * i + 1, 0)
        return i

    def end(self, i: int) -> None:
        if self.mm is not None:
            _SLOT.pack_into(self.mm, 0, 2 * i + 2, 0)

    def overtime(self) -> None:
        """The worker ends for a call past its grace: the journal says why."""
        if self.mm is not None:
            running = _SLOT.unpack_from(self.mm, 0)[0]
            _SLOT.pack_into(self.mm, 0, running, 1)
            self.mm.flush()

    def crashed(self, i: int) -> int | None:
        """The cause (0 crash, 1 overtime) when call `i` of this task ended a worker before, else None."""
        return self.poison.get(i)

    def _new_task(self, tc: Any) -> None:
        self.task, self.n, self.poison = (tc.taskAttemptId() if tc is not None else None), 0, {}
        if tc is None or tc.getLocalProperty("sql.streaming.queryId") is None:  # not a streaming batch
            return
        ident = {"q": tc.getLocalProperty("sql.streaming.queryId"), "b": tc.getLocalProperty("streaming.sql.batchId"),
                 "p": tc.partitionId(), "f": self.fn}
        crashed = {int(t) for t in (tc.getLocalProperty(CRASHED_TASKS) or "").split(",") if t}
        folder = journal_dir()
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            self.poison = _dead_calls(folder, ident, crashed) if crashed else {}
            if self.mm is None:
                path = folder / f"{os.getpid()}-{hashlib.sha1(self.fn.encode()).hexdigest()[:12]}.journal"
                with open(path, "w+b") as fh:
                    fh.truncate(SIZE)
                    self.mm = mmap.mmap(fh.fileno(), SIZE)
            head = json.dumps({**ident, "t": tc.taskAttemptId()}).encode()[: SIZE - HEADER - 1]
            self.mm[HEADER:HEADER + len(head) + 1] = head + b"\n"
            _SLOT.pack_into(self.mm, 0, 0, 0)
        except OSError:  # no journal: a crash stops the task as before
            self.mm = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _dead_calls(folder: Path, ident: dict[str, Any], crashed: set[int]) -> dict[int, int]:
    """Call number -> cause of the calls of this task (same query, batch, partition, function) that were running
    when the worker of one of the `crashed` task attempts died; journals of dead workers older than a day are
    removed."""
    out: dict[int, int] = {}
    now = time.time()
    for path in folder.glob("*.journal"):
        try:
            pid = int(path.name.split("-", 1)[0])
            if pid == os.getpid() or _alive(pid):
                continue
            data = path.read_bytes()
            if now - path.stat().st_mtime > 86400:
                path.unlink(missing_ok=True)
                continue
        except (OSError, ValueError):
            continue
        running, cause = _SLOT.unpack_from(data, 0)
        try:
            head = json.loads(data[HEADER:].split(b"\n", 1)[0])
        except ValueError:
            continue
        if head.pop("t", None) in crashed and head == ident and running % 2 == 1:
            out[(running - 1) // 2] = cause
    return out


def running_calls(query_id: str, batch: int) -> tuple[str, ...]:
    """The functions whose call was running in a task of batch `batch` of the streaming query `query_id`, as the
    journals of this machine say (the driver asks after a stop cancelled the batch: its workers were ended in a
    call, or are being ended)."""
    names: set[str] = set()
    for path in journal_dir().glob("*.journal"):
        try:
            data = path.read_bytes()
            head = json.loads(data[HEADER:].split(b"\n", 1)[0])
        except (OSError, ValueError):
            continue
        if len(data) >= HEADER and _SLOT.unpack_from(data, 0)[0] % 2 == 1 and head.get("q") == query_id \
                and str(head.get("b")) == str(batch):
            names.add(str(head.get("f")))
    return tuple(sorted(names))
