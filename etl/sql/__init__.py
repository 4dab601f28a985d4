"""The SQL front-end: a Flink / Blink / rsqldb style script -> the same pipeline document as YAML.

`load_sql_file(path, report)` returns an `etl.load.Document` whose `data` is the
mapping a YAML pipeline would hold (sources, transforms, sinks, tests) and whose
source map points into the script, so validation, graph, plan, explain and run
are shared with YAML and every diagnostic is `file.sql:line:col`.

Templating is YAML's: `{{ vars.x }}` (from `SET 'vars.x' = '...';` lines and --var), `{{ env("NAME", "default") }}`,
Jinja statements; the script is rendered first, keeping its line numbers.
Tests: `<name>.tests.yaml` beside `<name>.sql` holds the `tests:` list (as in a
YAML pipeline); its positions point into that file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from etl.diagnostics import Report, Span

SQL_SUFFIXES = (".sql",)


def is_sql(path: str | os.PathLike) -> bool:
    return str(path).lower().endswith(SQL_SUFFIXES)


def load_sql_file(path: str | os.PathLike, report: Report, *, cli_vars: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None) -> Any:
    from etl.load import read_pipeline_text

    file = str(path)
    text = read_pipeline_text(file, report)
    if text is None:
        return None
    return load_sql_text(text, file, report, cli_vars=cli_vars, environ=environ)


def load_sql_text(text: str, file: str, report: Report, *, cli_vars: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None) -> Any:
    from etl.load import Document
    from etl.load.template import has_template, render
    from etl.sql.build import Builder
    from etl.sql.pipeline import assemble
    from etl.sql.script import (Script, SqlSyntax, invisible_characters, mark_lines, report_syntax, split, tokenize,
                                unmark_lines)
    from etl.sql.statements import unwrap

    from etl.load.template import process_environ

    environ = process_environ() if environ is None else environ
    text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark is not part of the script (as in Flink)
    vars_: dict[str, Any] = {**script_vars(text), **dict(cli_vars or {})}
    secrets: set[str] = set()
    lines = None
    if has_template(text):
        rendered = render(mark_lines(text), file, vars_, report, strict=True, environ=environ)
        if rendered is None:
            return None
        (text, lines), secrets = unmark_lines(rendered.text), rendered.secrets
    script = Script(text, file, lines)
    invisible_characters(script, report)
    try:
        statements = split(tokenize(script))
    except SqlSyntax as e:
        report_syntax(report, e)
        return None
    statements = unwrap(script, statements, report)
    b = Builder(script, report)
    before = len(report.errors)
    data = assemble(b, statements)
    if vars_:
        data["vars"] = dict(vars_)
    if not (data["sources"] and data["sinks"]):
        if len(report.errors) == before:
            what = ("no table to read: declare one with CREATE TABLE ... WITH (type = '...')" if not data["sources"]
                    else "no INSERT INTO: a script writes at least one table")
            report.error("E101", what, Span(file, 1, 1) if not statements else script.at(statements[-1].first))
        return None  # nothing left to check: the script's own errors say it all
    _side_tests(file, data, b, report, environ)
    return Document(file, data, b.smap, vars_, secrets)


_SET_VAR = re.compile(r"""^[ \t]*SET[ \t]+'vars\.([A-Za-z_][A-Za-z0-9_]*)'[ \t]*=[ \t]*'((?:[^'\n]|'')*)'[ \t]*;""",
                      re.I | re.M)


def script_vars(text: str) -> dict[str, Any]:
    """`SET 'vars.name' = 'value';` lines: the script's own template variables (--var overrides them),
    read before rendering, as YAML's `vars:` block is."""
    return {m.group(1): m.group(2).replace("''", "'") for m in _SET_VAR.finditer(text)}


def _side_tests(file: str, data: dict, b: Any, report: Report, environ: Mapping[str, str]) -> None:
    """`<name>.tests.yaml`: a list of test cases, or a mapping with `tests:`."""
    from etl.load import load_file

    side = Path(file).with_suffix(".tests.yaml")
    if not side.is_file():
        return
    doc = load_file(side, report, environ=environ)
    if doc is None:
        return
    tests = doc.data.get("tests") if isinstance(doc.data, dict) else doc.data
    prefix: tuple = ("tests",) if isinstance(doc.data, dict) else ()
    if not isinstance(tests, list):
        report.error("E102", "a tests file holds a list of test cases (or `tests: [...]`)", doc.smap.value(()))
        return
    data["tests"] = tests
    for path, span in doc.smap.values.items():
        if path[:len(prefix)] == prefix:
            b.smap.values[("tests",) + path[len(prefix):]] = span
    for path, span in doc.smap.keys.items():
        if path[:len(prefix)] == prefix:
            b.smap.keys[("tests",) + path[len(prefix):]] = span
