"""What a micro-batch costs the driver beyond Spark's own work (issue 42; bench/batch_cost.py measures it): a clean
batch of a filter runs one Spark job (its sink's write; no dead-letter job, its frame not even made), its planning
(etl.compile.Compiler.evaluate) and its file sink's write and publish make the same few py4j round trips every
batch, and what is kept between batches (the filter's condition, etl.compile.jcalls' JVM objects) gives the rows a
new expression asks for."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.spark.helpers import checked
from tests.spark.test_physical_run import run_once

pytestmark = pytest.mark.spark

PIPELINE = """\
name: batch-cost
sources:
  - {{id: events, type: file, path: in, format: jsonl, max_files_per_trigger: 1,
     schema: {{id: bigint, level: string}}}}
transforms:
  - {{id: kept, type: filter, input: events, expr: "{expr}"}}
sinks:
  - {{id: out, type: file, input: kept, path: {out}}}
checkpoint: state
"""


def jsonl(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*")) for x in f.read_text().splitlines()]


def counting(spark, monkeypatch, owner=None, method: str = "evaluate") -> list[int]:
    """py4j round trips of each call of `owner.method` (default: a micro-batch's planning, Compiler.evaluate),
    counted on the thread running it."""
    from etl.compile import Compiler

    owner = owner or Compiler
    client = spark.sparkContext._gateway._gateway_client
    local = threading.local()
    trips: list[int] = []
    send, call = client.send_command, getattr(owner, method)

    def counted(*a, **k):
        if getattr(local, "n", None) is not None:
            local.n += 1
        return send(*a, **k)

    def called(self, *a, **k):
        local.n = 0
        try:
            return call(self, *a, **k)
        finally:
            trips.append(local.n)
            local.n = None

    monkeypatch.setattr(client, "send_command", counted)
    monkeypatch.setattr(owner, method, called)
    return trips


def test_a_clean_batch_runs_one_job_and_plans_in_the_same_few_round_trips(spark, tmp_path, monkeypatch):
    from etl.compile import jcalls
    from etl.components.sinks.file.build import FileSink

    (tmp_path / "in").mkdir()
    for b in range(3):
        (tmp_path / "in" / f"{b}.jsonl").write_text("".join(
            json.dumps({"id": b * 3 + i, "level": ("info", "warn", "error")[i]}) + "\n" for i in range(3)))
    (tmp_path / "in" / "3.jsonl").write_text('{"id": 9, "level": "warn"}\n{"id": 10, "level"\n')  # malformed
    for b in range(4):  # read in this order (Spark orders files by modification time)
        os.utime(tmp_path / "in" / f"{b}.jsonl", (1_700_000_000 + b, 1_700_000_000 + b))
    c = checked(tmp_path, PIPELINE.format(expr="level <> 'info'", out="out"))
    tracker = spark.sparkContext.statusTracker()
    trips = counting(spark, monkeypatch)
    written = counting(spark, monkeypatch, FileSink, "write_batch")
    persisted: list[int] = []
    persist = jcalls.persist
    monkeypatch.setattr(jcalls, "persist", lambda frame: persisted.append(len(trips)) or persist(frame))
    run = run_once(spark, c.plan, tmp_path / "state")
    jobs = tracker.getJobIdsForGroup(str(run.streams[0].runId))
    # one per clean batch: the sink's write (the dead letters counted 0 rows there); the last batch's dead letters
    # are counted 1 there and written by a job of their own
    assert len(jobs) == 3 + 2
    # a file source's micro-batch is cached for its dead letters in every batch: a file may change between two
    # reads (REREADS_EXACTLY is False), so its dead letters are never read from the files again
    assert persisted == [0, 1, 2, 3]
    # the first batch looks up what the next ones reuse; then the same few: the source's split and its dead-letter
    # count, the filter's where with its kept condition (110 before issue 42's cuts, 147 with the dead-letter job)
    assert len(trips) == 4 and trips[1] == trips[2] == trips[3] <= 10, trips
    # the file sinks' writes (4 batches, then the last one's dead letters): after the first, which looks up what the
    # next reuse, 2 round trips each: the counting filter with Spark's writer (one call), the tally; the replay check
    # and the publish of a local folder make none (Python's file functions; about 40 before)
    assert len(written) == 5 and written[0] <= 8 and written[1:] == [2, 2, 2, 2], written
    assert sorted(r["id"] for r in jsonl(tmp_path / "out")) == [1, 2, 4, 5, 7, 8, 9]
    assert [(d["stage"], d["payload"]) for d in jsonl(tmp_path / "dead_letters")] == [
        ("events", '{"id": 10, "level"')]

    # another expression in a new run: its own condition, not the one the first run kept
    c = checked(tmp_path, PIPELINE.format(expr="level = 'info'", out="out2"), name="q.yaml")
    run_once(spark, c.plan, tmp_path / "state2")
    assert sorted(r["id"] for r in jsonl(tmp_path / "out2")) == [0, 3, 6]
