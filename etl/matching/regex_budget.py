"""A time budget for the Python ``re`` searches of the matcher.

Python's ``re`` backtracks: ``(a+)+b\\1c`` takes 8 s on a 50-character value and
doubles with every extra ``a``. Hyperscan never backtracks, and rule sets in the
JVM have a step budget (etl/jvm/CountedText.java), but the patterns the matcher
confirms or runs in ``re`` (superset translations, backreferences, lookarounds)
had none: one such value stopped its Python worker for good.

``searches`` runs a list of searches under one interval timer (SIGALRM, one
``setitimer`` per list, not per value) of ``BUDGET_S``. When it fires, the
search then running starts over with a budget of its own, ``BUDGET_S`` +
``PER_CHAR_S`` per character of its value; a search past that gives up (a
warning names the pattern) and its answer is None ("could not decide"): the
matcher reports its rules as undecided for that row and the filter sends the
row to dead letters. ``re`` checks for signals while it backtracks, so the
handler's exception stops it.

Signals reach the main thread only: elsewhere (a thread pool) the searches run
without a budget, as before. A Python worker of Spark runs its UDFs in its main
thread. ``ETL_REGEX_BUDGET_S`` overrides ``BUDGET_S`` (etl.settings; 0 turns the
budget off).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence

from etl.settings import current

BUDGET_S = 1.0  # seconds one search may take before it gives up ...
PER_CHAR_S = 1e-6  # ... plus this per character of its value

Search = Callable[[str], object]
log = logging.getLogger(__name__)


class _Alarm(BaseException):
    """Raised by the SIGALRM handler (BaseException: nothing in between catches it by accident)."""


def _alarm(signum: int, frame: object) -> None:
    raise _Alarm()


def budget_s() -> float:
    """``ETL_REGEX_BUDGET_S`` of the driver's settings (default ``BUDGET_S``; 0: no budget); a Python worker
    has the driver's snapshot (etl.settings.use, called by the closure that runs the matcher)."""
    return current().regex_budget_s


def searches(calls: Sequence[tuple[Search, str]]) -> list[bool | None]:
    """``search(value) is not None`` for each (search, value); None where the search gave up."""
    if not calls:
        return []
    base = budget_s()
    if not base or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return [search(value) is not None for search, value in calls]
    out: list[bool | None] = []
    n = len(calls)
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        while len(out) < n:
            i = len(out)
            try:
                signal.setitimer(signal.ITIMER_REAL, base)  # the list's timer
                for search, value in calls[i:]:
                    found = search(value) is not None
                    out.append(found)
                signal.setitimer(signal.ITIMER_REAL, 0)
            except _Alarm:
                # the list's timer fired during search len(out) (or just after its answer was kept: then the
                # next one starts over): that search gets a budget of its own
                signal.setitimer(signal.ITIMER_REAL, 0)
                if len(out) < n:
                    out.append(_alone(*calls[len(out)], base))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return out


def _alone(search: Search, value: str, base: float) -> bool | None:
    seconds = base + PER_CHAR_S * len(value)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        found = search(value) is not None
        signal.setitimer(signal.ITIMER_REAL, 0)
        return found
    except _Alarm:
        pattern = getattr(getattr(search, "__self__", None), "pattern", "?")
        log.warning("a Python re search gave up after %.2f s on a value of %d characters (catastrophic "
                    "backtracking); its rules are undecided for that record: %s", seconds, len(value), pattern)
        return None
