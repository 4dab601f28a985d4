"""A sample of tests/fixtures/grok/pattern_cases.yaml (25 patterns of each library, every 12th and 14th) through
the JVM matcher (etl/jvm/Grok.java with its matcher program, as a grok transform runs it): one DataFrame of
their lines and near misses, one query; each pattern's captures equal the reference's (etl.grok, which
tests/unit/test_grok_pattern_cases.py checks against Logstash's answers), and its near miss does not match."""

from __future__ import annotations

import pytest

from etl.grok import expand
from tests.unit.test_grok_pattern_cases import CASES, DIFFERS

pytestmark = pytest.mark.spark

STEP = {"legacy": 12, "ecs-v1": 14}


def sample() -> list[tuple[str, str]]:
    out = []
    for library, step in STEP.items():
        names = [n for n in sorted(CASES[library]) if (library, n) not in DIFFERS]
        out += [(library, n) for n in names[::step][:25]]
    return out


def test_a_sample_of_the_pattern_cases_through_the_jvm_matcher(spark):
    from pyspark.sql import functions as F

    from etl.compile.transforms.grok import with_captures

    cases = sample()
    assert len(cases) == 50
    rows = []
    for i, (library, name) in enumerate(cases):
        c = CASES[library][name]
        rows += [(i, False, c["line"]), *([(i, True, c["miss"])] if c["miss"] is not None else [])]
    df = spark.createDataFrame(rows, "case int, miss boolean, line string")
    groks = [expand(CASES[lib][n]["grok"], library=lib) for lib, n in cases]
    for i, g in enumerate(groks):
        df = with_captures(df, F.col("line"), g, f"c{i}")
    got = {(r.case, r.miss): r[f"c{r.case}"] for r in df.collect()}  # one query
    for i, ((library, name), g) in enumerate(zip(cases, groks)):
        c = CASES[library][name]
        m = g.regex.search(c["line"])
        assert m is not None, (library, name)
        assert [x or None for x in got[(i, False)]] == [m.group(f.group) or None for f in g.fields], (library, name)
        if c["miss"] is not None:
            assert got[(i, True)] is None, (library, name, c["miss"])
