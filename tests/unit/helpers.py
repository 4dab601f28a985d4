"""Small helpers for unit tests: write a pipeline into a temp dir and check it."""
from __future__ import annotations

import textwrap
from pathlib import Path

from etl.check import check_file


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def check(tmp: Path, text: str, name: str = "p.yaml", environ=None, **kw):
    return check_file(write(tmp, name, text), environ=environ if environ is not None else {}, **kw)


def codes(checked) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in checked.report.sorted()]
