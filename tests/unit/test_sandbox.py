"""The template sandbox and its limits (etl.load.sandbox), and the rule-file path policy."""

from __future__ import annotations

import os

from etl.diagnostics import Report
from etl.load import load_text
from etl.load.rules import RulePathError, allow_paths, resolve_rule_paths
from etl.load.template import render


def _codes(text: str, **kw) -> list[tuple[str, int, int, str]]:
    report = Report()
    render(text, "p.yaml", {}, report, environ={}, **kw)
    return [(d.code, d.span.line, d.span.col, d.message) for d in report.errors]


def test_env_is_a_plain_function():
    assert _codes("{{ env.environ }}")[0][:3] == ("E003", 1, 1)
    assert _codes("a: {{ env.__globals__ }}")[0][:3] == ("E002", 1, 4)


def test_size_limits_are_positioned():
    assert _codes("x\ny: {{ 'a' * 10**9 }}")[0] == (
        "E002", 2, 4, "template limit: repeating a value 1000000000 times makes over 64 MB")
    assert _codes("{{ 9 ** (9 ** 9) }}")[0][:3] == ("E002", 1, 1)


def test_time_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ETL_TEMPLATE_TIMEOUT", "0.3")
    got = _codes("a: 1\n{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
    assert got == [("E002", 2, 1, "template limit: rendering takes longer than 0.3 s")]


def test_valid_jinja_is_not_reported_undefined():
    text = ("{% macro m(x) %}{{ x }}{{ caller() }}{% endmacro %}{% set c = cycler('a', 'b') %}"
            "{% set j = joiner('-') %}{% set ns = namespace(n=0) %}"
            "{% for i in range(3) %}{{ loop.index }}{{ c.next() }}{{ j() }}{% set ns.n = ns.n + 1 %}{% endfor %}"
            "{% call m(1) %}k{% endcall %}{{ ns.n }}")
    report = Report()
    out = render(text, "p.yaml", {}, report, environ={})
    assert report.errors == [] and out.text == "1a2b-3a-1k3"


def test_vars_block_bomb_is_reported_at_its_line():
    report = Report()
    assert load_text("vars:\n  big: \"{{ 9 ** (9 ** 9) }}\"\nname: \"{{ big }}\"\n", "p.yaml", report, environ={}) is None
    assert [(d.code, d.span.line) for d in report.errors] == [("E002", 2)]


def test_rule_paths_stay_in_the_folder(tmp_path, monkeypatch):
    from etl.load import paths

    monkeypatch.setattr(paths, "_ALLOWED", [])  # --allow-path is process-wide: keep it to this test
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "r.yaml").write_text("- id: r\n  when: {field: a, eq: 1}\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "o.yaml").write_text("- id: o\n  when: {field: a, eq: 1}\n")
    base = tmp_path / "p"
    assert resolve_rule_paths("r.yaml", base) == [str(base / "r.yaml")]
    for bad, code in (("../other/o.yaml", "E005"), ("/proc/self/environ", "E005"), ("../**/*.yaml", "E005"),
                      (".", "E005"), ("nope.yaml", "E006")):
        try:
            resolve_rule_paths(bad, base)
            raise AssertionError(bad)
        except RulePathError as e:
            assert e.code == code, bad
    allow_paths([tmp_path / "other"])
    assert [os.path.normpath(p) for p in resolve_rule_paths("../other/*.yaml", base)] == [str(tmp_path / "other" / "o.yaml")]


def test_fifo_pipeline_is_e005(tmp_path):
    from etl.check import check_file

    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    c = check_file(fifo)
    assert [(d.code, d.span.line) for d in c.report.errors] == [("E005", 1)]


def test_bounded_render_works_from_a_thread():
    """etl run reloads rule files from a listener thread: the forked child must still set its timer."""
    import threading

    got: dict = {}

    def go() -> None:
        report = Report()
        got["out"] = render("{% for i in range(2) %}{{ loop.index }}{% endfor %}", "p.yaml", {}, report, environ={})
        got["errors"] = report.errors

    t = threading.Thread(target=go)
    t.start()
    t.join()
    assert got["errors"] == [] and got["out"].text == "12"
