"""A damaged checkpoint and a full disk, as `etl run` names them (etl/runtime/failure.py): one prepared
checkpoint of a windowed pipeline (offsets, commits, metadata, a RocksDB state changelog), copied and damaged one
part at a time, each run again through the real runtime on the shared session: E412 at the pipeline's
`checkpoint:`, never "please report" (E401) nor "the server did not answer" (E407); a checkpoint on a full
tmpfs: E411; a stray file in the checkpoint's `_etl_drain/` moves no watermark."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from etl.runtime.failure import unknown_failure
from etl.runtime.runner import PipelineRun, RunFailed, RunOptions
from tests.spark.helpers import checked

pytestmark = pytest.mark.spark

PIPELINE = """\
name: faults
sources:
  - id: src
    type: file
    path: input
    format: jsonl
    schema: {k: string, ts: timestamp}
    event_time: {field: ts, watermark: 1s}
transforms:
  - {id: counts, type: window, input: src, kind: tumbling, size: 10s, group_by: [k], aggregates: [{fn: count, as: n}]}
sinks:
  - {id: out, type: file, input: counts, path: output}
checkpoint: state/checkpoint
"""


def feed(work, name, rows):
    (work / "input").mkdir(exist_ok=True)
    (work / "input" / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def run(spark, c, checkpoint, **options):
    r = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(checkpoint), progress="none", **options))
    try:
        r.start()
    except Exception as e:  # as `etl run` reports a failure to start (etl/commands/run.py)
        r.close()
        raise RunFailed(str(e), unknown_failure(c.plan.graph, e)) from e
    r.wait()


def failure_of(spark, c, checkpoint):
    with pytest.raises(RunFailed) as e:
        run(spark, c, checkpoint)
    return e.value.failure.diagnostic()


@pytest.fixture(scope="module")
def prepared(spark, tmp_path_factory):
    work = tmp_path_factory.mktemp("faults")
    c = checked(work, PIPELINE)
    feed(work, "a.jsonl", [{"k": "a", "ts": "2026-01-01T00:00:01Z"}, {"k": "b", "ts": "2026-01-01T00:00:02Z"}])
    run(spark, c, work / "ck")
    feed(work, "b.jsonl", [{"k": "a", "ts": "2026-01-01T00:00:03Z"}])
    return work, c


def damaged(work, name, how):
    ck = work / name
    shutil.copytree(work / "ck", ck)
    how(ck)
    return ck


def cut(pattern: str):
    """Damage the last file matching `pattern` as a crash or a full disk leaves it: its first half (and no
    checksum file, which would name the damage itself)."""

    def how(ck):
        f = sorted(ck.glob(pattern))[-1]
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
        for crc in f.parent.glob(f".{f.name}.crc"):
            crc.unlink()

    return how


@pytest.mark.parametrize("part, pattern, said", [
    ("offsets", "counts/offsets/[0-9]*", "Unexpected end-of-input in field name"),
    ("commits", "counts/commits/[0-9]*", "Unexpected end-of-input in field name"),
    ("metadata", "counts/metadata", "com.fasterxml.jackson.core.io.JsonEOFException: Unexpected end-of-input: "
                                    "was expecting closing quote for a string value"),
    ("changelog", "counts/state/0/0/*.changelog", "write failed: org.apache.spark.SparkException: "
     "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.  SQLSTATE: 58030 "
     "(terminal error, not retried)"),
])
def test_a_damaged_checkpoint_part_is_e412_at_the_checkpoint(spark, prepared, part, pattern, said):
    work, c = prepared
    ck = work / part
    shutil.copytree(work / "ck", ck)
    cut(pattern)(ck)
    d = failure_of(spark, c, ck)
    assert (d.code, d.span.line, d.span.col) == ("E412", 13, 13), d.render()  # checkpoint: state/checkpoint
    assert d.message == f"pipeline 'faults': the checkpoint is damaged: {said}"
    assert d.hint.startswith("a file of the checkpoint is truncated or not what Spark wrote")


def test_a_full_disk_is_e411_at_the_checkpoint(spark, prepared, tmp_path):
    """A new checkpoint on a full tmpfs (one page left; the test runs as root, as CI does): the files Spark
    writes before the first batch do not fit."""
    work, c = prepared
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        with open(disk / "filler", "wb") as fh:
            fh.write(b"x" * ((os.statvfs(disk).f_bavail - 1) * os.statvfs(disk).f_frsize))
        d = failure_of(spark, c, disk / "ck")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)
    assert (d.code, d.span.line, d.span.col) == ("E411", 13, 13)
    assert d.message.startswith("pipeline 'faults': disk full: ") and "No space left on device" in d.message


def test_a_stray_file_in_the_drain_folder_moves_no_watermark(spark, prepared, caplog):
    """A JSON file with a far event time dropped into `_etl_drain/` (without the run's nonce, or with a guessed
    one): were it read as a drain sentinel, the watermark would pass 9999 and the open window [0 s, 10 s) of a
    and b would be written by this --once run. Ignored, it stays open, and the run names the file."""
    from etl.compile import drain
    from etl.runtime.testing import CaptureSink

    work, c = prepared
    ck = work / "stray"
    shutil.copytree(work / "ck", ck)
    (ck / drain.SENTINEL_DIR / "evil.json").write_text(
        json.dumps({"t": drain.SENTINEL_TIME}) + "\n" + json.dumps({"t": drain.SENTINEL_TIME, "nonce": "x"}) + "\n")
    rows: list[dict] = []
    with caplog.at_level("WARNING", logger="etl.run"):
        run(spark, c, ck, sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows))
    assert rows == []
    assert [r.getMessage() for r in caplog.records if "evil.json" in r.getMessage()] == [
        f"etl: {ck}/_etl_drain/evil.json was not written by this run's drain: ignored (only `etl drain`, SIGUSR1 "
        "or --drain move the watermarks)"]
