"""etl.workercache: the one kind of per-process cache (issue 39), bounded and emptied by one call."""

from __future__ import annotations

import functools
import gc
import importlib
import weakref

import pytest

from etl import workercache
from etl.workercache import WorkerCache
from tests.unit.test_architecture_state import WORKER_CACHES


def test_the_oldest_entry_leaves_first_and_a_replaced_one_keeps_its_place():
    c: WorkerCache[str, int] = WorkerCache("test: order", 3)
    for i, k in enumerate("abcd"):
        c[k] = i
    assert list(c) == ["b", "c", "d"] and "a" not in c and len(c) == 3
    c["b"] = 10  # replaced, not moved: it is still the oldest
    c["e"] = 4
    assert list(c) == ["c", "d", "e"] and c.get("b") is None and c["e"] == 4
    assert c.pop("d") == 3 and c.pop("d", "gone") == "gone"


def test_close_is_called_on_eviction_and_on_clear_never_on_replacement():
    closed: list[int] = []
    c: WorkerCache[str, int] = WorkerCache("test: close", 2, close=closed.append)
    c["a"], c["b"] = 1, 2
    c["a"] = 11
    c["c"] = 3  # evicts "a" (11)
    assert closed == [11]
    c.clear()
    assert closed == [11, 2, 3] and len(c) == 0


def test_a_functools_cache_named_is_cleared_with_it():
    calls: list[int] = []

    @functools.lru_cache(maxsize=4)
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    c: WorkerCache[int, int] = WorkerCache("test: also", 4, also_clear=square.cache_clear)
    c[1] = square(3)
    square(3)
    assert calls == [3]
    c.clear()
    assert square(3) == 9 and calls == [3, 3] and len(c) == 0


def test_an_unbounded_cache_keeps_everything_and_a_bad_bound_is_refused():
    c: WorkerCache[int, int] = WorkerCache("test: unbounded", None)
    for i in range(1000):
        c[i] = i
    assert len(c) == 1000
    with pytest.raises(ValueError, match="test: zero: maxsize must be at least 1 or None, not 0"):
        WorkerCache("test: zero", 0)


def test_clear_all_empties_every_cache_of_etl():
    mods = {key.split(":")[0] for key in WORKER_CACHES}
    caches = {}
    for key in WORKER_CACHES:
        mod, name = key.split(":")
        caches[key] = getattr(importlib.import_module(mod), name)
        assert isinstance(caches[key], WorkerCache), key
    mine: WorkerCache[str, int] = WorkerCache("test: mine", 4)
    for key, c in [*caches.items(), ("mine", mine)]:
        if key not in ("etl.compile.lookups.store:_CACHE", "etl.runtime.partitions:LIVE"):  # values closed by clear
            c["test-key"] = 1
    names = workercache.clear_all()
    assert {c.name for c in caches.values()} | {"test: mine"} <= set(names)
    assert len({c.name for c in caches.values()}) == len(caches) == 16 and len(mods) == 15
    assert all(len(c) == 0 for c in [*caches.values(), mine])


class Owner:  # a SparkSession or SparkContext as owned_by sees one: hashed and weakly referenced by identity
    pass


def test_facts_belong_to_their_owner_and_go_with_it():
    a, b = Owner(), Owner()
    workercache.owned_by(a)["jvm: the jar loads"] = True
    workercache.owned_by(a).setdefault("jvm: files added", set()).add("etl-rules-1.txt")
    assert workercache.owned_by(a) == {"jvm: the jar loads": True, "jvm: files added": {"etl-rules-1.txt"}}
    assert workercache.owned_by(b) == {}
    marker = Owner()
    workercache.owned_by(a)["BatchRows"] = marker
    gone = weakref.ref(marker)
    del a, marker
    gc.collect()
    assert gone() is None  # the owner's facts went with it: a new context with a reused id() starts empty
    c = Owner()
    assert workercache.owned_by(c) == {}
