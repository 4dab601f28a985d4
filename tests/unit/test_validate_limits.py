"""Validation limits, in-process (fast): every file of tests/fixtures/hostile_validate gives exactly the
diagnostics of its expected.yaml entry, with the messages users read; the graph build stays linear."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from etl.check import check_file
from etl.diagnostics import Report, Suggester, did_you_mean
from etl.graph.build import build_graph

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "hostile_validate"
EXPECTED = YAML(typ="safe").load((CORPUS / "expected.yaml").read_text())


def _diags(name: str) -> list:
    return check_file(CORPUS / name, environ={}).report.sorted()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_outcome(name):
    checked = check_file(CORPUS / name, environ={})
    got = [f"{d.code} {d.span.line}:{d.span.col}" for d in checked.report.sorted()]
    assert sorted(got) == sorted(d for d in EXPECTED[name] if d != "ok")
    assert checked.ok == (name.startswith("ok_"))


@pytest.mark.parametrize("name,message", [
    ("dur_size_nan.yaml", "invalid duration nan for 'size' in transform 'w': not a number"),
    ("dur_size_inf.yaml", "invalid duration inf for 'size' in transform 'w': at most 365d"),
    ("dur_size_zero.yaml", "invalid duration 0ms for 'size' in transform 'w': must be at least 1ms"),
    ("dur_gap_negative.yaml", "invalid duration -5 for 'gap' in transform 'w': a duration cannot be negative"),
    ("dur_slide_longer_than_size.yaml", "invalid slide 2m for 'slide' in transform 'w': longer than the window "
                                        "`size` (1m)"),
    ("size_max_buffer_2pib.yaml", "invalid size '2000000GiB' for 'max_buffer' in sink 'out': at most 1PiB"),
    ("schema_unknown_nested.yaml", "invalid Spark SQL type 'array<map<string, strct<a: int>>>' for column 'x' of "
                                   "source 'k': unknown type 'strct'"),
    ("grok_bomb_31.yaml", "grok pattern of 'g': pattern expands to more than 200,000 characters (through %{P31})"),
    ("jdbc_host_query.yaml", "invalid host 'db.local?allowLocalInfile=true' of sink 'db': not a host name or address "
                             "(character '?')"),
    ("jdbc_database_query.yaml", "invalid database 'etl?allowLocalInfile=true&allowUrlInLocalInfile=true' of sink "
                                 "'db': use letters, digits, '_' and '$' (at most 64 characters)"),
    ("es_file_scheme.yaml", "invalid hosts.0 'file:///etc/passwd' of sink 'es': only http:// and https:// hosts are "
                            "allowed ('file:')"),
    ("sink_in_source.yaml", "sink 'out' writes into data/in/out, inside the folder that source 'logs' reads: its "
                            "output would be read back as input"),
    ("internal_columns.yaml", "column name '_etl_err' of transform 'g' is reserved: names starting with '_etl_' are "
                              "etl's internal columns"),
    ("internal_flag_columns.yaml", "column name '_final' of source 'logs' is reserved: _final, _retract, _update are "
                                   "the flag columns etl adds to the rows of windows and updates"),
    ("gen_field_names.yaml", "column name 'user.id' of source 'gen' has a dot: Spark reads `a.b` as field b of "
                             "column a"),
    ("windows_per_event_365d_1ms.yaml", "invalid slide 1ms for 'slide' in transform 'w': each event would be in "
                                        "31,536,000,000 windows (size 365d / slide 1ms), more than etl's limit of "
                                        "1,000 (Spark makes a copy of each row per window)"),
])
def test_messages(name, message):
    assert message in [d.message for d in _diags(name)]


def test_grok_bomb_is_fast():
    t = time.process_time()
    assert [d.code for d in _diags("grok_bomb_31.yaml")] == ["E302"]
    assert time.process_time() - t < 5


# ---------------------------------------------------------------------- linear graph build

class _Spec:
    def __init__(self, id_, type_, inputs=()):
        self.id, self.type, self.inputs = id_, type_, list(inputs)

    def is_static(self):
        return False


class _Pipeline:
    def __init__(self, sources, transforms, sinks):
        self.name, self.sources, self.transforms, self.sinks = "p", sources, transforms, sinks


def test_order_is_first_in_first_out_from_declaration():
    p = _Pipeline([_Spec("b", "generator"), _Spec("a", "generator")],
                  [_Spec("t2", "union", ["t1", "a"]), _Spec("t1", "union", ["b"])], [_Spec("out", "print", ["t2"])])
    graph = build_graph(p, None, Report())
    assert list(graph.nodes) == ["b", "a", "t1", "t2", "out"]


def test_cycle_reported_once_with_its_path():
    n = 5000
    p = _Pipeline([_Spec("s", "generator")], [_Spec(f"d{i}", "union", [f"d{(i + 1) % n}"]) for i in range(n)],
                  [_Spec("out", "print", ["d0"])])
    report = Report()
    t = time.process_time()  # (CPU seconds: a loaded machine's wall clock says nothing of the algorithm)
    graph = build_graph(p, None, report)
    assert time.process_time() - t < 5
    assert [d.code for d in report.diagnostics] == ["E202"]
    assert report.diagnostics[0].message == ("cycle in the pipeline: d4999 -> d4998 -> d4997 -> d4996 -> d4995 -> "
                                             "d4994 -> d4993 -> d4992 -> d4991 -> d4990 -> ... (4990 more) -> d4999")
    assert len(graph.nodes) == n + 2


def test_ten_thousand_unknown_inputs_in_seconds():
    n = 10_000
    p = _Pipeline([_Spec(f"s{i}", "generator") for i in range(n)],
                  [_Spec(f"t{i}", "union", [f"s{i}x"]) for i in range(n)], [_Spec("out", "print", ["t0"])])
    report = Report()
    t = time.process_time()
    build_graph(p, None, report)
    assert time.process_time() - t < 20
    e201 = [d for d in report.diagnostics if d.code == "E201"]
    assert len(e201) == n and e201[7].hint == "did you mean 's7'?"


def test_upstream_sources_shared_along_chains():
    n = 3000
    p = _Pipeline([_Spec("a", "generator"), _Spec("b", "generator")],
                  [_Spec("u", "union", ["a", "b"])] + [_Spec(f"d{i}", "union", [f"d{i - 1}" if i else "u"])
                                                       for i in range(n)],
                  [_Spec(f"o{i}", "print", [f"d{i}"]) for i in range(n)])
    graph = build_graph(p, None, Report())
    t = time.process_time()
    assert all([s.id for s in graph.upstream_sources(f"o{i}")] == ["a", "b"] for i in range(n))
    assert time.process_time() - t < 2
    assert graph.upstream_sources("a") == []


def test_suggester_agrees_with_did_you_mean_on_small_lists_and_scales():
    small = ["alpha", "beta", "gamma"]
    assert Suggester(small).hint("alpah") == did_you_mean("alpah", small) == "did you mean 'alpha'?"
    big = Suggester([f"source_{i}" for i in range(20_000)] + ["clickstream"])
    t = time.process_time()
    assert big.hint("clikstream") == "did you mean 'clickstream'?"
    assert big.hint("source_1234x") == "did you mean 'source_1234'?"
    assert time.process_time() - t < 1
    assert big.listing(3) == "clickstream, source_0, source_1, ..."


def test_wide_schemas_stay_linear(tmp_path):
    n = 5000
    cols = ", ".join(f"c{i}: string" for i in range(n))
    upper = ", ".join(f"C{i}" for i in range(n))  # resolved case-insensitively
    unknown = ", ".join(f"x{i}" for i in range(n))
    path = tmp_path / "wide.yaml"
    path.write_text(f"""name: wide
sources:
  - {{id: k, type: kafka, bootstrap_servers: "h:1", topics: [a], schema: {{{cols}, lastcol: int}}}}
transforms:
  - {{id: s, type: select, input: k, fields: [{upper}, lastcl]}}
  - {{id: s2, type: select, input: s, fields: [{unknown}]}}
sinks:
  - {{id: o, type: print, input: s2}}
""")
    t = time.process_time()
    report = check_file(path, environ={}).report
    assert time.process_time() - t < 30
    e310 = [d for d in report.diagnostics if d.code == "E310"]
    assert len(e310) == n + 1
    assert [d.hint for d in e310 if "'lastcl'" in d.message] == ["did you mean 'lastcol'?"]


@pytest.mark.parametrize("n,limit,expected", [
    (10_001, None, ["E102 7:5"]),
    (10_000, None, ["E102 9:5"]),  # the derive's column is the 10,001st
    (9_999, None, []),
    (50_000, "60000", []),
    (3, "2", ["E102 7:5"]),
])
def test_schema_width_cap(tmp_path, monkeypatch, n, limit, expected):
    """ETL_MAX_COLUMNS (10,000): a 50,000-column schema validated and ran the driver out of memory after 165 s;
    the error is where the width comes in (the source's schema), not again downstream."""
    from etl import settings

    if limit is not None:
        monkeypatch.setenv("ETL_MAX_COLUMNS", limit)
    monkeypatch.setattr(settings, "_CURRENT", None)
    cols = ", ".join(f"c{i}: string" for i in range(n))
    path = tmp_path / "wide.yaml"
    path.write_text(f"name: wide\nsources:\n  - id: k\n    type: file\n    path: in\n    format: jsonl\n"
                    f"    schema: {{{cols}}}\ntransforms:\n  - {{id: d, type: derive, input: k, columns: {{x: c1}}}}\n"
                    "sinks:\n  - {id: o, type: print, input: d}\n")
    t = time.process_time()
    report = check_file(path, environ={}).report
    assert time.process_time() - t < 30
    assert [f"{d.code} {d.span.line}:{d.span.col}" for d in report.sorted()] == expected
    if expected:
        cap, what = int(limit or 10_000), ("source 'k'", n) if n > int(limit or 10_000) else ("transform 'd'", n + 1)
        assert report.sorted()[0].message == (f"{what[0]} has {what[1]:,} columns, more than etl takes "
                                              f"(ETL_MAX_COLUMNS={cap:,}: Spark plans every column of every row)")
