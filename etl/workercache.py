"""One kind of per-process cache (issue 39): results of pure functions of their key, kept in a process that has no
session or run object to own them (an executor's Python worker, or the driver's memo of a program digest); and the
facts etl learns about one Spark session or context (`owned_by`), which live and die with it.

A `WorkerCache` is bounded (the oldest entry leaves first; `maxsize=None` only where the keys are the pipeline's own
finite things: its tables, its function files), thread-safe for single operations, and every one of them is emptied
by one call, `clear_all()` (tests start from a fresh process state with it instead of reaching into module globals).
A cache whose values hold resources names how to release one (`close`), called on eviction and on `clear`; one
that must be forgotten together with a functools cache names its cache_clear (`also_clear`).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Generic, TypeVar
from collections.abc import Callable, Iterator

K = TypeVar("K")
V = TypeVar("V")

_EVERY: weakref.WeakSet[WorkerCache[Any, Any]] = weakref.WeakSet()  # every cache made, for clear_all
# a SparkSession or SparkContext -> what etl learned about it (its JVM loads the jar, the files added to it, ...)
_OWNED: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
_OWNED_LOCK = threading.Lock()


class WorkerCache(Generic[K, V]):
    """A bounded mapping of a process's cached results: `name` says what it holds (for reports and tests)."""

    def __init__(self, name: str, maxsize: int | None, close: Callable[[V], Any] | None = None,
                 also_clear: Callable[[], Any] | None = None) -> None:
        if maxsize is not None and maxsize < 1:
            raise ValueError(f"{name}: maxsize must be at least 1 or None, not {maxsize}")
        self.name, self.maxsize, self._close, self._also_clear = name, maxsize, close, also_clear
        self._data: OrderedDict[K, V] = OrderedDict()
        self.lock = threading.RLock()  # for a caller's check-then-fill that must be one step
        _EVERY.add(self)

    def get(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._data))

    def __setitem__(self, key: K, value: V) -> None:
        evicted = []
        with self.lock:
            self._data[key] = value
            while self.maxsize is not None and len(self._data) > self.maxsize:
                evicted.append(self._data.popitem(last=False)[1])
        if self._close is not None:
            for v in evicted:
                self._close(v)

    def pop(self, key: K, default: Any = None) -> Any:
        with self.lock:
            return self._data.pop(key, default)

    def clear(self) -> None:
        with self.lock:
            values = list(self._data.values())
            self._data.clear()
            if self._also_clear is not None:
                self._also_clear()
        if self._close is not None:
            for v in values:
                self._close(v)

    def __repr__(self) -> str:
        return f"WorkerCache({self.name!r}, {len(self._data)}/{self.maxsize})"


def clear_all() -> list[str]:
    """Empty every WorkerCache of this process (tests, a fresh start); returns their names."""
    caches = sorted(_EVERY, key=lambda c: c.name)
    for c in caches:
        c.clear()
    return [c.name for c in caches]


def owned_by(owner: Any) -> dict[str, Any]:
    """The facts etl keeps about `owner` (a SparkSession or its SparkContext), by name: a dict that lives as long as
    the owner does (a new context with a reused id() starts with none, unlike a table keyed by id())."""
    with _OWNED_LOCK:
        got = _OWNED.get(owner)
        if got is None:
            got = _OWNED[owner] = {}
        return got
