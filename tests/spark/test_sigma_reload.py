"""Hot reload of a Sigma folder: added and changed rules apply from the next micro-batch; a changed file that
cannot be read keeps its previous version in force (with a warning naming it)."""

from __future__ import annotations

import logging
import os
import textwrap
from pathlib import Path

import pytest

from etl.check import check_file
from tests.spark.test_hot_reload import Feed, _wait, run_plan

pytestmark = pytest.mark.spark

PIPELINE = """
    name: t-sigma-reload
    trigger: {mode: interval, interval: 100ms}
    sources:
      - {id: src, type: file, path: in, format: jsonl, schema: {cmd: string}, max_files_per_trigger: 1}
    transforms:
      - {id: f, type: filter, input: src, mode: tag, tag_details: false, sigma: {paths: [rules]}}
    sinks: [{id: out, type: file, input: f, path: out}]
"""


def _sigma(folder: Path, name: str, needle: str, broken: bool = False) -> None:
    text = f"""\
        title: {name}
        logsource: {{product: linux}}
        detection:
            sel:
                cmd|contains: '{needle}'
            condition: {'sel and' if broken else 'sel'}
        level: high
    """
    tmp = folder / f".{name}.tmp"
    tmp.write_text(textwrap.dedent(text))
    os.replace(tmp, folder / "rules" / f"{name}.yml")


def test_sigma_folder_reloads_between_batches(spark, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="etl.rules")
    (tmp_path / "in").mkdir()
    (tmp_path / "rules").mkdir()
    _sigma(tmp_path, "a", "alpha")
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent(PIPELINE))
    c = check_file(p, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.diagnostics]
    batches: dict[int, list] = {}
    run = run_plan(c.plan, spark, tmp_path, batches)
    feed = Feed(tmp_path)
    try:
        feed.put("alpha 1", "beta 1")
        _wait(batches, 1, run)
        _sigma(tmp_path, "b", "beta")  # a new rule file
        feed.put("alpha 2", "beta 2")
        _wait(batches, 2, run)
        _sigma(tmp_path, "a", "gamma", broken=True)  # a broken change: a (alpha) stays
        feed.put("alpha 3", "gamma 3")
        _wait(batches, 3, run)
        _sigma(tmp_path, "a", "gamma")  # fixed
        feed.put("alpha 4", "gamma 4")
        _wait(batches, 4, run)
    finally:
        run.request_stop()
        run.wait()
    assert [b for _, b in sorted(batches.items()) if b] == [
        [("alpha 1", ["a"]), ("beta 1", [])],
        [("alpha 2", ["a"]), ("beta 2", ["b"])],
        [("alpha 3", ["a"]), ("gamma 3", [])],
        [("alpha 4", []), ("gamma 4", ["a"])],
    ]
    kept = [r.getMessage() for r in caplog.records if "previous version stays" in r.getMessage()]
    assert len(kept) == 1 and f"{tmp_path}/rules/a.yml:" in kept[0] and "W340" in kept[0], kept
