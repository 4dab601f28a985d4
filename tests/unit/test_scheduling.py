"""tests/scheduling.py: the order xdist's workers hand out the suite's work in."""

from __future__ import annotations

import json

from tests import scheduling


class Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid  # as xdist's loadgroup worker leaves it: `<id>@<groups>` for a test in groups

    def __repr__(self) -> str:
        return self.nodeid


def test_units_longest_first_with_their_tests_together_and_ties_in_file_order():
    items = [Item("a.py::quick"), Item("a.py::k1@kafka"), Item("b.py::long"), Item("b.py::unknown[x@y]"),
             Item("c.py::k2@kafka"), Item("c.py::also_unknown"), Item("d.py::two@kafka_mariadb")]
    seconds = {"a.py::quick": 0.2, "a.py::k1": 30.0, "b.py::long": 45.0, "c.py::k2": 20.0, "d.py::two": 40.0}
    order = scheduling.longest_first(items, seconds)
    # kafka's two tests 50 s, b.py::long 45, d.py::two 40 (a group of its own: kafka_mariadb), then the unknown
    # tests (DEFAULT_SECONDS each, in file order: an `@` in a parameter is no group), the quick one last
    assert [i.nodeid for i in order] == ["a.py::k1@kafka", "c.py::k2@kafka", "b.py::long", "d.py::two@kafka_mariadb",
                                         "b.py::unknown[x@y]", "c.py::also_unknown", "a.py::quick"]
    assert [scheduling.unit(items[i]) for i in (6, 0, 3)] == ["@kafka_mariadb", "a.py::quick", "b.py::unknown[x@y]"]
    assert scheduling.base_id("c.py::k2@kafka") == "c.py::k2" and scheduling.base_id("b.py::t[x@y]") == "b.py::t[x@y]"


def test_the_durations_file_is_read_and_a_broken_one_is_ignored(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"a.py::t": 3.5}))
    bad.write_text("{not json")
    assert scheduling.load_durations(good) == {"a.py::t": 3.5}
    assert scheduling.load_durations(bad) == {} == scheduling.load_durations(tmp_path / "absent.json")


def test_the_checked_in_durations_name_tests_that_exist(request):
    """A renamed test's entry is dead weight: `make durations` writes the file again."""
    stored = scheduling.load_durations()
    assert len(stored) > 50 and all(v >= scheduling.STORE_MIN_SECONDS for v in stored.values())
    files = {nodeid.split("::", 1)[0] for nodeid in stored}
    missing = sorted(f for f in files if not (request.config.rootpath / f).is_file())
    assert missing == []
