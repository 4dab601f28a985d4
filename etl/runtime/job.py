"""What one pipeline's run needs around its PipelineRun, shared by `etl run` (one) and `etl serve` (many):

* `hold`: its checkpoint held for this process and claimed for its pipeline (E410, E413 refused up front);
* `drive`: its queries started and waited for; a failure (compile, query, sink) or a batch a stop cancelled is
  one positioned line on the console, its stack in the run's log.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any
from collections.abc import Callable

from etl import settings
from etl.compile.context import CompileError
from etl.runtime import statedir
from etl.runtime.errors import RunFailed
from etl.runtime.failure import checkpoint_fault, report, stack_of, stop_cancelled, unknown_failure
from etl.secrets import redact


class Refused(Exception):
    """A checkpoint the run may not use: `line` is its diagnostic (E410, E412, E413), rendered."""

    def __init__(self, line: str):
        super().__init__(line)
        self.line = line


def hold(graph: Any, checkpoint: str, log: Path) -> int:
    """Hold `checkpoint` for this process (the descriptor returned; closing it lets the next run take it) and
    claim it for the pipeline, before anything is written; Refused otherwise (a running run's files untouched)."""
    fd: int | None = None
    try:
        fd = statedir.lock(checkpoint)
        statedir.claim(checkpoint, graph.name)
        if log.parent.exists():  # an older run's, maybe open (a new one is made 0700 by the umask)
            statedir.close(log.parent)
    except (statedir.CheckpointInUse, statedir.ForeignCheckpoint, OSError) as e:
        if fd is not None:
            os.close(fd)
        raise Refused(redact(checkpoint_fault(graph, e).diagnostic().render()) or "") from None
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def drive(runner: Any, log: Path, echo: Callable[[str], None], how: Callable[[], str],
          started: Callable[[], None] | None = None) -> int:
    """Start `runner`'s queries (then call `started`), wait until they end or a stop; 0, or 1 after one line per
    failure (`how`: what stopped the run, for a batch the stop cancelled)."""
    graph = runner.graph

    def failed(diag: Any, exc: BaseException) -> int:
        stack = exc.failure.stack if isinstance(exc, RunFailed) and exc.failure else stack_of(exc)
        echo(report(diag, log, stack))
        return 1

    try:
        runner.start()
    except CompileError as e:
        runner.close()
        return failed(e.diagnostic(graph), e)
    except Exception as e:  # noqa: BLE001 - a failure etl does not know: one line, the stack in the log
        runner.close()
        return failed(unknown_failure(graph, e).diagnostic(), e)
    if started is not None:
        started()
    try:
        runner.wait()
    except RunFailed as e:
        return failed(e.failure.diagnostic() if e.failure else unknown_failure(graph, e).diagnostic(), e)
    except Exception as e:  # noqa: BLE001
        return failed(unknown_failure(graph, e).diagnostic(), e)
    if runner.cancelled:  # a batch past ETL_STOP_GRACE_S after the stop: one line each, exit 1
        for c in runner.cancelled:
            echo(report(stop_cancelled(graph, c, settings.current().stop_grace_s, how()).diagnostic(), log, ""))
        return 1
    return 0


class Signals:
    """SIGINT and SIGTERM of a run or a set of jobs: the first one asks for a graceful stop (`first(name)`: finish
    the batch in flight, then stop), a second one leaves at once (exit 130: the checkpoints still make the next
    start correct). `extra`: more handlers (`etl run`'s SIGUSR1, drain). `restore()` puts the previous ones back."""

    def __init__(self, first: Callable[[str], None],
                 extra: dict[signal.Signals, Callable[[int, Any], None]] | None = None):
        self.count, self.how = 0, "SIGTERM"
        self._first = first
        self._previous = {s: signal.signal(s, self._on) for s in (signal.SIGINT, signal.SIGTERM)}
        for s, handler in (extra or {}).items():
            self._previous[s] = signal.signal(s, handler)

    def _on(self, signum: int, frame: Any) -> None:
        self.count += 1
        self.how = signal.Signals(signum).name
        if self.count > 1:
            os._exit(130)
        self._first(self.how)

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
