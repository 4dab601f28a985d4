"""The on-disk cache of compiled programs and Hyperscan databases."""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

from etl import diskcache, settings
from etl.matching.matcher import Matcher
from etl.optimize import compile_rules
from etl.spec.rules import Rule


def _rules(n: int, word: str = "tok") -> list[Rule]:
    return [Rule.model_validate({"id": f"r{i}", "when": {"field": "cmd", "regex": rf"{word}{i}\s+x"}}) for i in range(n)]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(diskcache, "MIN_PATTERNS", 2)
    monkeypatch.setattr(diskcache, "MIN_RULES", 2)
    return tmp_path / "cache"


def _no_hyperscan_compile(monkeypatch):
    def boom(patterns):
        raise AssertionError("compiled although cached")

    monkeypatch.setattr(sys.modules["etl.optimize.fallback"], "compile_database", boom)


def test_program_cache_skips_compiling_on_the_second_run(cache, monkeypatch):
    first = compile_rules(_rules(5), cache=True)
    assert len(list((cache / "programs").iterdir())) == 1
    _no_hyperscan_compile(monkeypatch)
    second = compile_rules(_rules(5), cache=True)
    assert second.digest == first.digest
    batch = pa.RecordBatch.from_pydict({"cmd": ["tok3  x", "tok3x", None]})
    assert Matcher(second, cache=False).match(batch).matched_ids() == [["r3"], [], []]


def test_database_cache_serves_a_changed_rule_set_with_the_same_patterns(cache, monkeypatch):
    compile_rules(_rules(4), cache=True)
    renamed = [Rule.model_validate({"id": f"other{i}", "when": r.when.model_dump(by_alias=True)})
               for i, r in enumerate(_rules(4))]
    _no_hyperscan_compile(monkeypatch)
    program = compile_rules(renamed, cache=True)  # new program key, same database key
    assert program.rule_ids == ("other0", "other1", "other2", "other3")


def test_a_damaged_entry_is_recompiled(cache):
    first = compile_rules(_rules(3), cache=True)
    for kind in ("programs", "hs"):
        for f in (cache / kind).iterdir():
            f.write_bytes(f.read_bytes()[:-5] + b"xxxxx")
    again = compile_rules(_rules(3), cache=True)
    assert again.digest == first.digest


def test_small_rule_sets_and_cache_off_touch_no_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_CACHE_DIR", str(tmp_path / "c"))
    compile_rules(_rules(3), cache=True)  # below MIN_RULES / MIN_PATTERNS
    assert not (tmp_path / "c").exists()
    monkeypatch.setenv("ETL_CACHE_DIR", "off")
    settings.reset()
    monkeypatch.setattr(diskcache, "MIN_PATTERNS", 1)
    monkeypatch.setattr(diskcache, "MIN_RULES", 1)
    assert diskcache.cache_dir() is None
    compile_rules(_rules(3), cache=True)
    assert not (tmp_path / "c").exists()


def test_keys_change_with_the_patterns_and_flags():
    k = diskcache.database_key([b"a", b"b"], [0, 1], [0, 0])
    assert k == diskcache.database_key([b"a", b"b"], [0, 1], [0, 0])
    assert k != diskcache.database_key([b"a", b"c"], [0, 1], [0, 0])
    assert k != diskcache.database_key([b"a", b"b"], [0, 1], [0, 1])
    assert k != diskcache.database_key([b"ab"], [0], [0])
