"""Hyperscan compiles with a time budget (etl/regexes/hsbound.py)."""
import time

import pytest

from etl.regexes import hsbound, hsregex
from etl import workercache

SLOW = r"\w{1,3000}@\w{1,3000}\.\w{2,3000}"  # about 15 s to compile alone on the reference machine


@pytest.fixture(autouse=True)
def forking(monkeypatch):
    """These tests run in validate's process shape: no pyspark loaded (another test of the same pytest run may
    have imported it, which switches the fork off: see hsbound.can_fork)."""
    monkeypatch.setattr(hsbound, "can_fork", lambda: True)


def _sleep_then(value):
    time.sleep(30)
    return value


def test_bounded_returns_the_result_or_the_exception():
    assert hsbound.bounded(lambda a, b: a + b, 2, 3, seconds=30) == 5
    with pytest.raises(ZeroDivisionError):
        hsbound.bounded(lambda: 1 / 0, seconds=30)


def test_bounded_gives_up_at_its_budget():
    t = time.perf_counter()
    with pytest.raises(hsbound.BudgetExceeded, match="longer than 0.5 s"):
        hsbound.bounded(_sleep_then, 1, seconds=0.5)
    assert time.perf_counter() - t < 5


def test_which_compiles_may_be_slow():
    assert hsbound.may_be_slow(SLOW)
    assert hsbound.may_be_slow("a" * 2001)
    assert not hsbound.may_be_slow(r"curl .*\| *sh")
    assert not hsbound.may_be_slow(r"[0-9]{1,3}(\.[0-9]{1,3}){3}")


def test_a_slow_pattern_counts_as_rejected(monkeypatch):
    monkeypatch.setattr(hsbound, "PATTERN_BUDGET_S", 0.5)
    workercache.clear_all()  # the slow verdicts and test_compile's cache
    t = hsregex.translate(SLOW, 0)  # the expression Hyperscan gets: Python's \w as explicit code point ranges
    start = time.perf_counter()
    assert hsregex.test_compile(t.expression, t.flags) == "not compiled: the compile took longer than 0.5 s"
    assert hsregex.known_rejected(t.expression, t.flags)
    assert time.perf_counter() - start < 5
    assert hsregex.test_compile("admin@", hsregex.HS_BASE_FLAGS) is None
