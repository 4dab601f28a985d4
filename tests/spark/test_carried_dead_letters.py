"""A text source's own dead letters (a line over ETL_MAX_RECORD_MB, a line that is not UTF-8) carried through its
grok to the grok's split write (etl.compile.deadletter.carrying): the good rows and exactly those dead letters, the
source's micro-batch read once (nothing persisted), and a micro-batch without dead letters runs no Spark job for
them (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etl import settings
from tests.spark.helpers import checked
from tests.spark.test_physical_run import run_once

pytestmark = pytest.mark.spark

PIPELINE = """\
name: carried
sources:
  - {id: lines, type: file, path: in, format: text}
transforms:
  - {id: parsed, type: grok, input: lines, field: line, pattern: '%{WORD:verb} %{INT:n:int}'}
sinks:
  - {id: out, type: file, input: parsed, path: out}
checkpoint: state
"""


def jsonl(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*")) for x in f.read_text().splitlines()]


def tapping(monkeypatch) -> list:
    """The dead letters `etl tap` samples of stage `parsed` in each micro-batch, once the sinks wrote it (one Spark
    job each)."""
    from etl.compile import Compiler
    from etl.runtime.control import component_frame
    from etl.runtime.runner import PipelineRun

    got: list = []
    batches: list = []
    evaluate, record = Compiler.evaluate, PipelineRun._record_engines

    def evaluated(self, query, *a, **k):
        batches.append((query, evaluate(self, query, *a, **k)))
        return batches[-1][1]

    def recorded(self, q, sinks):
        got.append([(r["stage"], r["reason"]) for r in component_frame(*batches[-1], "parsed", True).collect()])
        return record(self, q, sinks)

    monkeypatch.setattr(Compiler, "evaluate", evaluated)
    monkeypatch.setattr(PipelineRun, "_record_engines", recorded)
    return got


def test_a_batch_writes_its_sources_dead_letters_with_its_grok_in_one_pass(spark, tmp_path, monkeypatch):
    from pyspark.sql import DataFrame

    monkeypatch.setenv("ETL_MAX_RECORD_MB", "1")
    settings.reset()
    persisted = []
    persist = DataFrame.persist
    monkeypatch.setattr(DataFrame, "persist", lambda self, *a: persisted.append(self) or persist(self, *a))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("get 1\nput 2\n")
    c = checked(tmp_path, PIPELINE)
    tracker = spark.sparkContext.statusTracker()
    try:
        run = run_once(spark, c.plan, tmp_path / "state")
        clean = tracker.getJobIdsForGroup(str(run.streams[0].runId))
        big = "x" * (1024 * 1024 + 1)
        (tmp_path / "in" / "b.txt").write_bytes(b"del 3\n" + big.encode() + b"\nbad \xff\xfe 4\nno match\nset 5\n")
        tapped = tapping(monkeypatch)
        run = run_once(spark, c.plan, tmp_path / "state")
        dirty = tracker.getJobIdsForGroup(str(run.streams[0].runId))
    finally:
        settings.reset()
    assert tapped == [[("parsed", "no match for grok pattern")]]  # `etl tap --dead-letters parsed`: its own
    assert (len(clean), len(dirty) - len(tapped)) == (1, 2)  # the grok's split write; then the dead letters' write
    assert persisted == []
    assert sorted((r["verb"], r["n"]) for r in jsonl(tmp_path / "out")) == [
        ("del", 3), ("get", 1), ("put", 2), ("set", 5)]
    dead = sorted((d["pipeline"], d["stage"], d["reason"], d["payload"]) for d in jsonl(tmp_path / "dead_letters"))
    assert dead == [
        ("carried", "lines", "line is not valid UTF-8 (byte 0xFF at offset 4); payload: the line's 8 bytes in base64",
         "YmFkIP/+IDQ="),
        ("carried", "lines", f"record of {len(big) + 1} bytes (line end included) is over the maximum record size of "
         "1048576 bytes (ETL_MAX_RECORD_MB); payload: its first 1024 bytes", "x" * 1024),
        ("carried", "parsed", "no match for grok pattern", "no match")]


SELECTED = """\
name: counted
sources:
  - {id: lines, type: file, path: in, format: text}
transforms:
  - {id: picked, type: select, input: lines, fields: [line]}
sinks:
  - {id: out, type: file, input: picked, path: out}
checkpoint: state
"""


def test_a_batch_whose_cached_source_has_no_failed_row_runs_no_dead_letter_job(spark, tmp_path, monkeypatch):
    """A first stage that cannot carry (select): the source's micro-batch is cached for it and for its dead letters,
    whose failed rows the sink's pass counts (etl.compile.counts.DeadCounts): 0, no job for them."""
    monkeypatch.setenv("ETL_MAX_RECORD_MB", "1")
    settings.reset()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("get 1\nput 2\n")
    c = checked(tmp_path, SELECTED)
    tracker = spark.sparkContext.statusTracker()
    try:
        run = run_once(spark, c.plan, tmp_path / "state")
        clean = tracker.getJobIdsForGroup(str(run.streams[0].runId))
        (tmp_path / "in" / "b.txt").write_bytes(b"del 3\nbad \xff\n")
        run = run_once(spark, c.plan, tmp_path / "state")
        dirty = tracker.getJobIdsForGroup(str(run.streams[0].runId))
    finally:
        settings.reset()
    assert (len(clean), len(dirty)) == (1, 2)
    assert sorted(r["line"] for r in jsonl(tmp_path / "out")) == ["del 3", "get 1", "put 2"]
    assert [(d["stage"], d["reason"], d["payload"]) for d in jsonl(tmp_path / "dead_letters")] == [
        ("lines", "line is not valid UTF-8 (byte 0xFF at offset 4); payload: the line's 5 bytes in base64", "YmFkIP8=")]
