"""The order in which pytest-xdist hands out work: the longest first.

`make test` runs the suite on 3 workers with `--dist loadgroup --no-loadscope-reorder`: xdist gives each idle
worker the next unit (an xdist group: a family of servers, a module-scoped fixture; or one test) in collection
order. In file order, the suite's longest tests (the SIGKILL and restart loops of tests/windows, tests/e2e) came
last: for the last minute one worker ran them while the others had nothing left (measured: the three workers ended
at 831, 835 and 891 s). Here each worker orders its collection by the units' measured seconds, longest first
(the scheduling rule known as LPT), so the short tests fill the end.

The seconds come from tests/durations.json (setup, call and teardown of a test as the suite ran them, tests of
2 s or more; any other test counts as DEFAULT_SECONDS). `make durations` writes it again from a run of the whole
suite (`--store-durations`). A stale or missing entry only makes the order less good, never a test wrong.
Without xdist (one process) the order stays the files'."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parent / "durations.json"
DEFAULT_SECONDS = 0.5
STORE_MIN_SECONDS = 2.0


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true", default=False,
                     help=f"write each test's seconds (those of {STORE_MIN_SECONDS:g} s or more) to {DURATIONS}")


def _split(nodeid: str) -> tuple[str, str | None]:
    """The test's id and the group xdist's loadgroup workers appended to it (`<id>@<groups>`; an `@` inside a
    parameter's brackets is not one), as xdist's scheduler splits it."""
    at = nodeid.rfind("@")
    return (nodeid[:at], nodeid[at + 1:]) if at > nodeid.rfind("]") else (nodeid, None)


def unit(item: pytest.Item) -> str:
    """The unit xdist's loadgroup scheduler hands out whole: the test's group (its id's suffix, written by xdist's
    worker before this plugin's hook runs), or the test itself."""
    test, group = _split(item.nodeid)
    return f"@{group}" if group else test


def base_id(nodeid: str) -> str:
    """The test's id without the `@group` suffix xdist's workers append."""
    return _split(nodeid)[0]


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """The items with each unit's tests together, the units in decreasing total seconds (ties: file order)."""
    units: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        units[unit(item)].append(item)
    cost = {u: sum(seconds.get(base_id(i.nodeid), DEFAULT_SECONDS) for i in its) for u, its in units.items()}
    order = sorted(units, key=lambda u: -cost[u])  # stable: equal units keep their file order
    return [item for u in order for item in units[u]]


@pytest.hookimpl(trylast=True)  # after tests/conftest.py's groups, and xdist's worker has appended them to the ids
def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):  # an xdist worker: every worker computes the same order
        items[:] = longest_first(items, load_durations())


class _Recorder:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report):
        self.seconds[base_id(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session):
        if session.testsfailed:
            return
        kept = load_durations()
        kept.update({k: round(v, 1) for k, v in self.seconds.items()})
        kept = {k: v for k, v in sorted(kept.items()) if v >= STORE_MIN_SECONDS}
        DURATIONS.write_text(json.dumps(kept, indent=0) + "\n")


def pytest_configure(config):
    if config.getoption("--store-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(), "etl-durations-recorder")
