"""A sample of tests/fixtures/grok/pattern_cases.yaml (25 patterns of each library, every 12th and 14th) through
the JVM matcher (etl/jvm/Grok.java with its matcher program, as a grok transform runs it): one DataFrame of
their lines and near misses, one query; each pattern's captures equal the reference's (etl.grok, which
tests/unit/test_grok_pattern_cases.py checks against Logstash's answers), and its near miss does not match. The
same query runs LOGSTASH_LINES (multi-line messages, Unicode word boundaries) and gives their fields."""

from __future__ import annotations

import pytest

from etl.grok import expand
from tests.unit.test_grok_pattern_cases import CASES, DIFFERS, LOGSTASH_LINES

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

    from etl.components.transforms.grok.build import with_captures

    cases = sample()
    assert len(cases) == 50
    rows = []
    for i, (library, name) in enumerate(cases):
        c = CASES[library][name]
        rows += [(i, False, c["line"]), *([(i, True, c["miss"])] if c["miss"] is not None else [])]
    rows += [(len(cases) + k, False, line) for k, (_, line, _) in enumerate(LOGSTASH_LINES)]
    df = spark.createDataFrame(rows, "case int, miss boolean, line string")
    groks = [expand(CASES[lib][n]["grok"], library=lib) for lib, n in cases] + [expand(p) for p, _, _ in LOGSTASH_LINES]
    for i, g in enumerate(groks):
        df = with_captures(df, F.col("line"), g, f"c{i}")
        if i >= len(cases):  # and Spark's regexp functions (the engine without etl's jar)
            df = with_captures(df, F.col("line"), g, f"s{i}", engine="spark-regexp")
    collected = df.collect()  # one query
    got = {(r.case, r.miss): r[f"c{r.case}"] for r in collected}
    sql = {r.case: r[f"s{r.case}"] for r in collected if r.case >= len(cases)}
    for i, ((library, name), g) in enumerate(zip(cases, groks, strict=False)):
        c = CASES[library][name]
        m = g.search(c["line"])
        assert m is not None, (library, name)
        assert [x or None for x in got[(i, False)]] == [m.group(f.group) or None for f in g.fields], (library, name)
        if c["miss"] is not None:
            assert got[(i, True)] is None, (library, name, c["miss"])
    for k, (pattern, line, groups) in enumerate(LOGSTASH_LINES):
        got_k, sql_k = got[(len(cases) + k, False)], sql[len(cases) + k]
        assert (None if got_k is None else list(got_k)) == groups, (pattern, line)
        assert (None if sql_k is None else [x or None for x in sql_k]) == groups, (pattern, line)
