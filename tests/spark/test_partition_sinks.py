"""Sinks write from the executors, exactly once per (sink, query, batch, partition) (etl/runtime/partitions.py):
a batch whose partition 1 fails leaves nothing visible, its replay keeps partition 0's staged part and writes
only partition 1; a crash in the middle of the driver's publish is finished before the replay."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from etl.connectors.sinks.file import FileSink
from etl.runtime.partitions import write_path
from etl.runtime.sink import SinkContext, SinkFailed, TerminalError
from etl.spec.sinks import FileSink as FileSinkSpec

pytestmark = pytest.mark.spark


def setup_module(module):
    from pyspark import cloudpickle  # the sink classes below travel to the executors by value

    cloudpickle.register_pickle_by_value(module)


class FlakyFile(FileSink):
    """Partition 1 fails while `<out>/../fail` exists, once partition 0's part is staged."""

    def batch_insert(self, rows):
        flag = self.dir.parent / "fail"
        if self.ctx.partition == 1 and flag.exists():
            deadline = time.monotonic() + 60
            while not any(self.staging(int(flag.read_text())).glob("part-00000.*")) and time.monotonic() < deadline:
                time.sleep(0.05)
            raise TerminalError("disk on fire")
        super().batch_insert(rows)


class CrashingPublish(FileSink):
    """The driver dies after the first rename of the publish."""

    def _publish(self, batch_id):
        stage = self.staging(batch_id)
        first = sorted(stage.glob("part-*"))[0]
        os.replace(first, self.dir / f"part-{self.ctx.scope}-{batch_id:08d}-{self.tag}-{first.name[5:]}")
        raise KeyboardInterrupt("driver killed")


def _ctx(tmp_path: Path) -> SinkContext:
    return SinkContext("p", "out", "q", str(tmp_path / "ckpt"), str(tmp_path), sleep=lambda s: None,
                       where="p.yaml:4:5")


def _frame(spark, n: int):
    rows = [(i, f"name-{i}") for i in range(n)]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "id bigint, name string")


def _visible(out: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(out.glob("part-*.jsonl")) for x in f.read_text().splitlines()]


def test_write_path_decision():
    assert write_path("print") == ("driver", "prints on the driver's console")
    assert write_path("mysql")[0] == write_path("file")[0] == write_path("kafka")[0] == "executors"


def test_failed_partition_is_redone_alone_and_nothing_partial_is_visible(spark, tmp_path):
    spec = FileSinkSpec(id="out", type="file", path="out", format="jsonl", batch_size=3)
    (tmp_path / "fail").write_text("4")
    with pytest.raises(SinkFailed) as e:
        FlakyFile(spec, _ctx(tmp_path)).write_batch(_frame(spark, 10), 4)
    assert str(e.value) == "sink 'out' (p.yaml:4:5): write of 3 rows failed: disk on fire (terminal error, not retried)"
    assert e.value.sink_id == "out" and not e.value.unreachable
    out = tmp_path / "out"
    assert _visible(out) == []  # nothing of the batch is visible
    stage = FlakyFile(spec, _ctx(tmp_path)).staging(4)
    assert sorted(p.name for p in stage.iterdir()) == ["part-00000.jsonl"]  # partition 0 committed its part
    (tmp_path / "fail").unlink()
    res = FlakyFile(spec, _ctx(tmp_path)).write_batch(_frame(spark, 10), 4)
    assert (res.rows, res.skipped) == (5, False)  # partition 1's rows only: partition 0 skipped
    assert sorted(p.name for p in out.iterdir()) == ["part-q-00000004-0-00000.jsonl", "part-q-00000004-0-00001.jsonl"]
    assert sorted(r["id"] for r in _visible(out)) == list(range(10))
    again = FlakyFile(spec, _ctx(tmp_path)).write_batch(_frame(spark, 10), 4)
    assert (again.rows, again.skipped) == (0, True)
    assert sorted(r["id"] for r in _visible(out)) == list(range(10))


def test_a_publish_cut_short_is_finished_by_the_replay(spark, tmp_path):
    spec = FileSinkSpec(id="out", type="file", path="file://" + str(tmp_path / "out"), format="jsonl")
    with pytest.raises(KeyboardInterrupt):
        CrashingPublish(spec, _ctx(tmp_path)).write_batch(_frame(spark, 8), 0)
    out = tmp_path / "out"
    assert len(list(out.glob("part-*"))) == 1
    res = FileSink(spec, _ctx(tmp_path)).write_batch(_frame(spark, 8), 0)
    assert res.skipped and res.rows == 0
    assert sorted(r["id"] for r in _visible(out)) == list(range(8))
    assert sorted(p.name for p in out.iterdir()) == ["part-q-00000000-0-00000.jsonl", "part-q-00000000-0-00001.jsonl"]


def test_other_uri_schemes_are_refused(tmp_path):
    spec = FileSinkSpec(id="out", type="file", path="hdfs://nn:8020/x", format="jsonl")
    with pytest.raises(TerminalError, match="only local paths and file:// URIs"):
        FileSink(spec, _ctx(tmp_path))
