"""Property: what `etl validate` accepts, `etl explain` accepts too.

Over the hostile corpus (tests/fixtures/hostile_validate) and over hypothesis mutations of the
example pipelines that put hostile values (huge, infinite, not-a-number, negative, zero, odd
strings, internal column names, URL and JDBC tricks) into scalar fields and optional keys: if
validation (`check_file`, as `etl validate` calls it) finds no error, the explain path
(`check_file(programs=True)` and `explain_plan`, as `etl explain` calls them) gives a plan and
its text; neither ever reports E999.
"""
from __future__ import annotations

import copy
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.check import check_file
from etl.diagnostics import Report
from etl.load import load_file
from etl.plan.explain import explain_plan
from trees import dump, get, paths, put

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "fixtures" / "hostile_validate"
WORK = Path(tempfile.mkdtemp(prefix="etl-validate-explain-"))
shutil.copytree(ROOT / "pipelines" / "rules", WORK / "rules")
shutil.copytree(ROOT / "pipelines" / "data", WORK / "data")
SEEDS = [load_file(p, Report(), environ={}).data for p in sorted((ROOT / "pipelines").glob("*.yaml"))]
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

HOSTILE_VALUES = [
    10**400, -(10**30), 2**63, 2**63 - 1, -1, 0, float("inf"), float("-inf"), float("nan"), 1e-9, 0.0004,
    "9" * 400 + "s", "1e400", "1e400GB", "0s", "0ms", "366d", "365d", "-5s", "0.0001s", "2000000GiB", "1048576GiB",
    "", " ", "array<", "decimal(39)", "map<string>", "struct<a int,>", "_etl_err", "_ETL_payload", "x?y=1", "a/b",
    "db;x=1", "file:///etc/passwd", "ftp://h", "http://h:99999", "%{P}", "%{IP:_etl_x}", "a`b", "\x00", "é" * 70,
]
OPTIONAL = ["size", "slide", "gap", "watermark", "max_buffer", "flush_interval", "refresh", "batch_size", "port",
            "host", "database", "table", "within", "max_bytes_per_trigger", "rate", "count", "tag_field", "interval"]


def assert_validate_implies_explain(path: Path) -> bool:
    validated = check_file(path, environ={})
    assert not [d for d in validated.report.diagnostics if d.code == "E999"], validated.report.sorted()
    explained = check_file(path, environ={}, programs=True)
    assert not [d for d in explained.report.diagnostics if d.code == "E999"], explained.report.sorted()
    if not validated.ok:
        return False
    assert explained.plan is not None, [d.render() for d in explained.report.errors]
    assert explain_plan(explained.plan).startswith("pipeline ")
    return True


@pytest.mark.parametrize("name", sorted(p.name for p in HOSTILE.glob("*.yaml")))
def test_hostile_corpus(name):
    assert assert_validate_implies_explain(HOSTILE / name) == name.startswith("ok_")


@st.composite
def hostile_pipeline(draw):
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            path = draw(st.sampled_from([p for p in paths(data) if p and not isinstance(get(data, p), (dict, list))]))
            put(data, path, draw(st.sampled_from(HOSTILE_VALUES)))
        else:
            target = get(data, draw(st.sampled_from([p for p in paths(data) if isinstance(get(data, p), dict)])))
            target[draw(st.sampled_from(OPTIONAL))] = draw(st.sampled_from(HOSTILE_VALUES))
    return data


_n = iter(range(10**9))


@SETTINGS
@given(hostile_pipeline())
def test_mutated_examples(data):
    path = WORK / f"case{next(_n) % 20}.yaml"
    path.write_text(dump(data))
    assert_validate_implies_explain(path)
