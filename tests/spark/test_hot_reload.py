"""Hot reload: a running query picks up changed rule files at the next micro-batch; invalid changes are
rejected with their diagnostics and the old rules stay in force; `reload: false` keeps the first rules."""

from __future__ import annotations

import json
import logging
import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from etl.check import check_file
from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.testing import CaptureSink

pytestmark = pytest.mark.spark

PIPELINE = """
    name: t-reload
    trigger: {{mode: interval, interval: 100ms}}
    sources:
      - {{id: src, type: file, path: in, format: jsonl, schema: {{cmd: string}}, max_files_per_trigger: 1}}
    transforms:
      - {{id: f, type: filter, input: src, mode: tag, rule_files: [rules/*.yaml], reload: {reload}}}
    sinks: [{{id: out, type: file, input: f, path: out}}]
"""


class BatchSink(CaptureSink):
    """Captures rows per micro-batch: {batch_id: [(cmd, sorted rule ids)]}."""

    def __init__(self, spec: Any, ctx: Any, batches: dict[int, list]):
        super().__init__(spec, ctx, [])
        self.batches = batches
        self.batch_id = -1

    def write_batch(self, df: Any, batch_id: int) -> Any:
        self.batch_id = batch_id
        self.batches.setdefault(batch_id, [])
        return super().write_batch(df, batch_id)

    def batch_insert(self, rows: Any) -> None:
        self.batches[self.batch_id].extend(sorted((r["cmd"], sorted(r["matched_rules"])) for r in rows.to_pylist()))


def _rules(folder: Path, text: str) -> None:
    """Replace the rule file atomically (as editors and config management tools do)."""
    tmp = folder / ".rules.tmp"
    tmp.write_text(textwrap.dedent(text))
    os.replace(tmp, folder / "rules" / "main.yaml")


class Feed:
    def __init__(self, folder: Path):
        self.folder = folder
        self.n = 0

    def put(self, *cmds: str) -> None:
        self.n += 1
        tmp = self.folder / f".part-{self.n}.tmp"
        tmp.write_text("".join(json.dumps({"cmd": c}) + "\n" for c in cmds))
        os.replace(tmp, self.folder / "in" / f"part-{self.n:03d}.jsonl")


def _wait(batches: dict, n: int, run: PipelineRun, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len([b for b in batches.values() if b]) < n:
        if any(not s.isActive for s in run.streams):
            raise AssertionError(f"query stopped: {[s.exception() for s in run.streams]}")
        assert time.monotonic() < deadline, f"only {len(batches)} batches after {timeout} s: {batches}"
        time.sleep(0.1)


def _start(spark: Any, tmp_path: Path, reload: bool, batches: dict) -> PipelineRun:
    (tmp_path / "in").mkdir()
    (tmp_path / "rules").mkdir()
    _rules(tmp_path, "- {id: a, when: {field: cmd, contains: alpha}}\n")
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent(PIPELINE.format(reload=str(reload).lower())))
    c = check_file(p, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.diagnostics]
    return run_plan(c.plan, spark, tmp_path, batches)


def run_plan(plan: Any, spark: Any, tmp_path: Path, batches: dict) -> PipelineRun:
    """Start `plan` with its sink capturing rows per micro-batch into `batches`."""
    run = PipelineRun(plan, spark, RunOptions(checkpoint=str(tmp_path / "ck"), progress="none",
                                              sink_factory=lambda out, spec, ctx: BatchSink(spec, ctx, batches),
                                              echo=lambda s: None))
    run.start()
    return run


def test_changed_rules_apply_from_the_next_batch_and_invalid_ones_are_rejected(spark, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="etl.rules")
    batches: dict[int, list] = {}
    run = _start(spark, tmp_path, True, batches)
    feed = Feed(tmp_path)
    try:
        feed.put("alpha 1", "beta 1")
        _wait(batches, 1, run)
        _rules(tmp_path, """\
            - {id: b, when: {field: cmd, contains: beta}}
            - {id: b2, when: {field: cmd, regex: 'beta \\d'}}
        """)
        feed.put("alpha 2", "beta 2")
        _wait(batches, 2, run)
        _rules(tmp_path, """\
            - {id: b, when: {field: cmd, contains: beta}}
            - {id: bad, when: {field: cmd, regex: 'beta ('}}
        """)
        feed.put("alpha 3", "beta 3")
        _wait(batches, 3, run)
        _rules(tmp_path, "- {id: g, when: {field: cmd, contains: gamma}}\n")
        feed.put("alpha 4", "gamma 4")
        _wait(batches, 4, run)
    finally:
        run.request_stop()
        run.wait()
    got = [b for _, b in sorted(batches.items()) if b]
    assert got == [
        [("alpha 1", ["a"]), ("beta 1", [])],
        [("alpha 2", []), ("beta 2", ["b", "b2"])],
        [("alpha 3", []), ("beta 3", ["b", "b2"])],  # the broken file was rejected: rules b, b2 still apply
        [("alpha 4", []), ("gamma 4", ["g"])],
    ]
    rejected = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    assert len(rejected) == 1, [r.getMessage() for r in caplog.records]
    rule_file = str(tmp_path / "rules" / "main.yaml")
    assert f"{rule_file}:2:" in rejected[0] and "E300" in rejected[0] and "rule 'bad'" in rejected[0]
    rs = run.compiler.ctx.caches.rule_sets["f"]
    assert rs.version == 2 and [h.split(":")[0] for h in rs.history] == ["reloaded", "rejected", "reloaded"]


def test_reload_false_keeps_the_rules_it_started_with(spark, tmp_path):
    batches: dict[int, list] = {}
    run = _start(spark, tmp_path, False, batches)
    feed = Feed(tmp_path)
    try:
        feed.put("alpha 1", "beta 1")
        _wait(batches, 1, run)
        _rules(tmp_path, "- {id: b, when: {field: cmd, contains: beta}}\n")
        feed.put("alpha 2", "beta 2")
        _wait(batches, 2, run)
    finally:
        run.request_stop()
        run.wait()
    assert [b for _, b in sorted(batches.items()) if b] == [
        [("alpha 1", ["a"]), ("beta 1", [])],
        [("alpha 2", ["a"]), ("beta 2", [])],
    ]


def test_a_change_between_planning_and_the_first_batch_is_picked_up(spark, tmp_path):
    batches: dict[int, list] = {}
    (tmp_path / "in").mkdir()
    (tmp_path / "rules").mkdir()
    _rules(tmp_path, "- {id: a, when: {field: cmd, contains: alpha}}\n")
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent(PIPELINE.format(reload="true")))
    c = check_file(p, programs=True)
    _rules(tmp_path, "- {id: b, when: {field: cmd, contains: beta}}\n")  # edited while etl run starts
    run = run_plan(c.plan, spark, tmp_path, batches)
    try:
        Feed(tmp_path).put("alpha 1", "beta 1")
        _wait(batches, 1, run)
    finally:
        run.request_stop()
        run.wait()
    assert [b for _, b in sorted(batches.items()) if b] == [[("alpha 1", []), ("beta 1", ["b"])]]
