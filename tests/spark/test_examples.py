"""`etl test` over every example pipeline (the quickstart and pipelines/example_*.yaml), in the shared session."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl.check import check_file
from etl.runtime.testing import run_tests

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "pipelines").glob("example_*.yaml")) + [ROOT / "pipelines" / "quickstart.yaml"]
RUNNABLE_TRANSFORMS = ("filter", "derive", "select", "grok", "dissect", "parse", "union", "route", "dedupe", "window",
                      "sigma_correlation")


def test_one_example_per_runnable_transform_each_with_tests():
    names = {p.stem.removeprefix("example_") for p in EXAMPLES}
    assert set(RUNNABLE_TRANSFORMS) <= names
    for p in EXAMPLES:
        c = check_file(p)
        assert c.plan is not None and not c.report.warnings, [d.render() for d in c.report.sorted()]
        assert c.plan.graph.pipeline.tests, f"{p.name} has no tests: block"
        assert (p.read_text().splitlines()[0] == "# yaml-language-server: $schema=../schemas/pipeline.schema.json")


@pytest.mark.spark
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_pipeline_tests_pass(spark, path):
    c = check_file(path, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    results = run_tests(c, spark)
    assert results
    failed = [f"{r.name}:\n{r.message}" for r in results if not r.ok]
    assert not failed, "\n\n".join(failed)


@pytest.mark.spark
def test_etl_test_reports_a_diff_and_junit(spark, tmp_path):
    """A failing case names the sink and shows the missing and unexpected rows; JUnit XML lists it."""
    from etl.runtime.testing import junit_xml

    text = (ROOT / "pipelines" / "example_route.yaml").read_text().replace("large: [{order_id: b}]",
                                                                         "large: [{order_id: zzz}]")
    (tmp_path / "data").mkdir()
    p = tmp_path / "example_route.yaml"
    p.write_text(text)
    (res,) = run_tests(check_file(p, programs=True), spark)
    assert not res.ok
    assert "sink 'large': expected 1 rows, got 1" in res.message
    assert '- {"order_id": "zzz"}' in res.message and '+ {"order_id": "b"}' in res.message
    xml = junit_xml([res])
    assert 'failures="1"' in xml and "zzz" in xml
