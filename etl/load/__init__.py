"""Load a pipeline file: template rendering, YAML parsing, source map.

`load_file` returns a `Document` (plain data plus positions) or None with
diagnostics in the report. It never raises on user input.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from etl.diagnostics import Report, Span
from etl.secrets import redact
from etl.load.template import has_template, process_environ, render
from etl.load.yamlmap import SourceMap, parse_yaml

__all__ = ["Document", "SourceMap", "load_file", "load_text"]

@dataclass
class Document:
    file: str
    data: Any
    smap: SourceMap
    vars: dict[str, Any] = field(default_factory=dict)
    secrets: set[str] = field(default_factory=set)

    @property
    def base_dir(self) -> Path:
        return Path(self.file).resolve().parent

    def redact(self, text: str) -> str:
        """Hide every value that came from the environment (etl.secrets: all files, every form)."""
        return redact(text) or text


_TAG_RE = re.compile(r"\{\{.*?\}\}|\{#.*?#\}", re.S)
_STMT_LINE_RE = re.compile(r"^[ \t]*\{%.*?%\}[ \t]*$\n?", re.M | re.S)


_VARS_RE = re.compile(r"^vars[ \t]*:", re.M)
_TOP_KEY_RE = re.compile(r"^[^\s#]", re.M)


def _vars_block(text: str) -> str | None:
    """The text of the top-level `vars:` block (None when there is none)."""
    m = _VARS_RE.search(text)
    if m is None:
        return None
    nxt = _TOP_KEY_RE.search(text, m.end())
    return text[m.start():nxt.start() if nxt else len(text)]


class _Stop(Exception):
    """The lenient first pass hit a render limit: reported as it is, without a second try."""

    def __init__(self, diagnostics: list):
        super().__init__("template limit")
        self.diagnostics = diagnostics


def _read_vars(source: str, file: str, vars_: Mapping[str, Any], environ: Mapping[str, str]) -> dict | None:
    scratch = Report()
    rendered = render(source, file, vars_, scratch, strict=False, environ=environ)
    if rendered is None:
        limit = [d for d in scratch.diagnostics if d.message.startswith("template limit")]
        if limit:
            raise _Stop(limit)
        return None
    parsed = parse_yaml(rendered.text, file, Report())
    if parsed is not None and isinstance(parsed[0], dict) and isinstance(parsed[0].get("vars"), dict):
        return dict(parsed[0]["vars"])
    return None


def _first_pass_vars(text: str, file: str, environ: Mapping[str, str],
                     cli_vars: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read `vars:` (rendered leniently) so the strict pass can use them.

    Only the `vars:` block is rendered and parsed when it can be cut out (again, up to
    three times, so that a var may use another var); else the whole file, and as a
    last resort the file with its template tags blanked out."""
    block = _vars_block(text)
    if block is None and "vars" not in text:
        return {}
    cli = dict(cli_vars or {})
    if block is not None:
        found: dict[str, Any] = {}
        for _ in range(3):
            again = _read_vars(block, file, {**found, **cli}, environ)
            if again is None or again == found:
                break
            found = again
        if found:
            return found
    for source in (text, _TAG_RE.sub("", _STMT_LINE_RE.sub("", text))):
        found2 = _read_vars(source, file, cli, environ)
        if found2 is not None:
            return found2
    return {}


def load_text(text: str, file: str, report: Report, *, cli_vars: Mapping[str, Any] | None = None,
              environ: Mapping[str, str] | None = None, inherit_vars: Mapping[str, Any] | None = None
              ) -> Document | None:
    environ = process_environ() if environ is None else environ
    vars_: dict[str, Any] = dict(inherit_vars or {})
    secrets: set[str] = set()
    if has_template(text):
        if inherit_vars is None:
            try:
                vars_.update(_first_pass_vars(text, file, environ, cli_vars))
            except _Stop as stop:
                report.extend(stop.diagnostics)
                return None
        vars_.update(cli_vars or {})
        rendered = render(text, file, vars_, report, strict=True, environ=environ)
        if rendered is None:
            return None
        text, secrets = rendered.text, rendered.secrets
    parsed = parse_yaml(text, file, report)
    if parsed is None:
        return None
    data, smap = parsed
    if isinstance(data, dict) and isinstance(data.get("vars"), dict) and inherit_vars is None:
        vars_ = {**data["vars"], **vars_}
        vars_.update(cli_vars or {})
    return Document(file, data, smap, vars_, secrets)


def load_file(path: str | os.PathLike, report: Report, *, cli_vars: Mapping[str, Any] | None = None,
              environ: Mapping[str, str] | None = None, inherit_vars: Mapping[str, Any] | None = None
              ) -> Document | None:
    file = str(path)
    text = read_pipeline_text(file, report)
    if text is None:
        return None
    return load_text(text, file, report, cli_vars=cli_vars, environ=environ, inherit_vars=inherit_vars)


def read_pipeline_text(file: str, report: Report) -> str | None:
    """The text of a pipeline file (YAML or SQL): a regular file of UTF-8 within ETL_MAX_FILE_MB (a pipe or
    device is refused, never waited on: etl.load.paths.read_text); None with an E005 at its first line otherwise."""
    from etl.load.paths import PIPELINES, PathError, read_text

    try:
        return read_text(file, PIPELINES)
    except PathError as e:
        report.error(e.code, e.message, Span(file, 1, 1), e.hint)
        return None
