"""What the fast SQL tests share: a script checked as `etl validate` checks it, and its diagnostics' positions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from etl.check import check_file


def check_sql(tmp_path: Path, text: str, name: str = "job.sql") -> Any:
    """`text` written to tmp_path/name (UTF-8) and checked with no environment."""
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return check_file(f, environ={})


def codes(c: Any) -> list[tuple[str, int, int]]:
    """Each diagnostic's (code, line, col), in the report's order."""
    return [(d.code, d.span.line, d.span.col) for d in c.report.sorted()]
