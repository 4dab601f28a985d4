"""Pre-fingerprint cache: executor-side verdicts keyed by the values of the fields the rules read.

Two events equal on every fingerprint field (see the fingerprint pass) get the
same verdict, so a verdict (the tuple of matched rule indices, ``()`` for none)
is remembered under the tuple of those values. The cache is a bounded LRU.

It measures itself: lookups are counted in windows of ``window`` lookups, and
when a window's hit rate is below ``min_hit_rate`` the cache switches itself
off (and frees its entries) -- on high-cardinality data (command lines with
pids and timestamps) building keys costs more than it saves. ``reset()``
switches it back on. Repeats inside one batch count as hits (the matcher
computes one verdict per distinct key).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

Verdict = tuple[int, ...]


class FingerprintCache:
    def __init__(self, capacity: int = 65536, window: int = 20000, min_hit_rate: float = 0.3):
        if capacity < 1 or window < 1:
            raise ValueError("capacity and window must be positive")
        self.capacity = capacity
        self.window = window
        self.min_hit_rate = min_hit_rate
        self._data: OrderedDict[Hashable, Verdict] = OrderedDict()
        self.enabled = True
        self.lookups = 0
        self.hits = 0
        self._win_lookups = 0
        self._win_hits = 0
        self.signature: object = None
        self.disabled_at: int | None = None  # lookup count when it switched off

    def __len__(self) -> int:
        return len(self._data)

    @property
    def hit_rate(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0

    def check_signature(self, signature: object) -> None:
        """Forget everything when the key types change (e.g. a column became a string)."""
        if signature != self.signature:
            self._data.clear()
            self.signature = signature

    def lookup_batch(self, keys: list) -> tuple[list[Verdict | None], dict[Hashable, list[int]]]:
        """Verdicts per key (None on a miss) and the rows of each distinct missing key."""
        data = self._data
        out: list[Verdict | None] = [None] * len(keys)
        misses: dict[Hashable, list[int]] = {}
        hits = 0
        for i, k in enumerate(keys):
            v = data.get(k)
            if v is not None:
                data.move_to_end(k)
                out[i] = v
                hits += 1
                continue
            rows = misses.get(k)
            if rows is None:
                misses[k] = [i]
            else:
                rows.append(i)
                hits += 1
        self._count(len(keys), hits)
        return out, misses

    def store(self, key: Hashable, verdict: Verdict) -> None:
        if not self.enabled:
            return
        data = self._data
        data[key] = verdict
        data.move_to_end(key)
        while len(data) > self.capacity:
            data.popitem(last=False)

    def _count(self, lookups: int, hits: int) -> None:
        self.lookups += lookups
        self.hits += hits
        self._win_lookups += lookups
        self._win_hits += hits
        if self._win_lookups >= self.window:
            rate = self._win_hits / self._win_lookups
            self._win_lookups = self._win_hits = 0
            if rate < self.min_hit_rate:
                self.enabled = False
                self.disabled_at = self.lookups
                self._data.clear()

    def reset(self) -> None:
        self._data.clear()
        self.enabled = True
        self.lookups = self.hits = self._win_lookups = self._win_hits = 0
        self.disabled_at = None
