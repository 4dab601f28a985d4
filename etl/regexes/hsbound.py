"""Hyperscan compiles with a time budget, so `etl validate` and `etl explain` never hang on a pattern.

Hyperscan's compiler runs in C and cannot be interrupted; some patterns take long (measured:
`\\w{1,3000}@\\w{1,3000}\\.\\w{2,3000}` 15 s alone). A compile that may be slow runs in a forked
child process that the parent kills when the budget is spent; the caller then treats the pattern
as one Hyperscan rejects (it falls back to its relaxed form or to Python `re`, and validation
warns with W301), or the database as one to sift pattern by pattern.

Which compiles are forked: a single pattern with a large bounded repeat or a long expression
(cheap ones, nearly all, compile in-process: a fork costs milliseconds), and every whole
database. Not when pyspark is loaded (`etl run`, `etl test`: a JVM's threads do not survive a
fork well); there the compile runs in-process, as before.
"""

from __future__ import annotations

import os
import pickle
import re
import select
import signal
import sys
import time
from typing import Any
from collections.abc import Callable

PATTERN_BUDGET_S = 5.0  # one pattern compiled alone (test compile)
DATABASE_BUDGET_S = 60.0  # one whole database
_BIG_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
SLOW_REPEAT = 100  # a bounded repeat this large may make the compile slow
SLOW_LENGTH = 2000  # as may an expression this long


class BudgetExceeded(Exception):
    """The compile did not finish within its budget (the child was killed)."""

    def __init__(self, seconds: float):
        super().__init__(f"the compile took longer than {seconds:g} s")
        self.seconds = seconds


def may_be_slow(expression: str) -> bool:
    if len(expression) > SLOW_LENGTH:
        return True
    return any(int(m.group(2) or m.group(1)) >= SLOW_REPEAT for m in _BIG_REPEAT.finditer(expression))


def can_fork() -> bool:
    return hasattr(os, "fork") and "pyspark" not in sys.modules


def bounded(fn: Callable[..., Any], *args: Any, seconds: float) -> Any:
    """`fn(*args)` in a forked child, killed after `seconds`: its result, or its exception raised
    again here, or BudgetExceeded. Runs in-process when forking is not safe."""
    if not can_fork():
        return fn(*args)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: compute, send, exit without running the parent's cleanup
        os.close(rfd)
        try:
            try:
                payload = pickle.dumps((True, fn(*args)))
            except BaseException as e:  # noqa: BLE001 - handed to the parent as is
                payload = pickle.dumps((False, e))
            with os.fdopen(wfd, "wb") as out:
                out.write(payload)
        finally:
            os._exit(0)
    os.close(wfd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([rfd], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                raise BudgetExceeded(seconds)
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(rfd)
        os.waitpid(pid, 0)
    try:
        ok, value = pickle.loads(b"".join(chunks))
    except (EOFError, pickle.UnpicklingError):
        raise RuntimeError("the Hyperscan compile process ended without a result") from None
    if ok:
        return value
    raise value
