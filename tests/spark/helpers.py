"""Run small inline pipelines through the real compile/runtime path (shared session)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from etl.check import check_file


def checked(tmp_path: Path, yaml_text: str, name: str = "p.yaml") -> Any:
    f = tmp_path / name
    f.write_text(textwrap.dedent(yaml_text))
    c = check_file(f, programs=True)
    assert c.plan is not None, "\n".join(d.render() for d in c.report.sorted())
    return c


def run_events(spark: Any, tmp_path: Path, yaml_text: str, inputs: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Feed `inputs` to the pipeline's sources; return every captured output (sinks and dead_letter)."""
    from etl.runtime.testing import run_case
    from etl.spec import TestCase

    c = checked(tmp_path, yaml_text)
    res = run_case(c.plan, TestCase(name="inline", inputs=inputs), spark)
    assert res.ok, res.message
    return res.captured
