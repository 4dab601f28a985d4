"""Sinks write from the executors, exactly once per (sink, query, batch, partition) (etl/runtime/partitions.py):
a batch whose partition 1 fails commits nothing on the driver, and its replay skips partition 0 (committed
by the first attempt) and writes only partition 1. The file sink's own batches (Spark's writer, the driver's
publish): tests/spark/test_file_sink_hadoop.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from etl.runtime.partitions import write_path
from etl.runtime.sink import AbstractSink, SinkContext, SinkFailed, TerminalError
from etl.components.sinks.file.spec import FileSink as FileSinkSpec

pytestmark = pytest.mark.spark


def setup_module(module):
    from pyspark import cloudpickle  # the sink classes below travel to the executors by value

    cloudpickle.register_pickle_by_value(module)


class PartitionFiles(AbstractSink):
    """Each partition writes `<out>/p<partition>-<batch>.jsonl` (its commit marker) from its executor; partition 1
    fails while `<out>/../fail` exists, once partition 0's file is there."""

    def __init__(self, spec, ctx):
        super().__init__(spec, ctx)
        self.out = Path(ctx.base_dir) / "out"
        self.lines: list[str] = []

    def final(self, batch_id: int) -> Path:
        return self.out / f"p{self.ctx.partition}-{batch_id}.jsonl"

    def is_committed(self, batch_id: int) -> bool:
        return self.final(batch_id).exists() if self.ctx.partition is not None else super().is_committed(batch_id)

    def mark_committed(self, batch_id: int) -> None:
        pass  # the partition's file is its marker

    def batch_insert(self, rows):
        flag = self.out.parent / "fail"
        if self.ctx.partition == 1 and flag.exists():
            deadline = time.monotonic() + 60
            while not (self.out / f"p0-{flag.read_text()}.jsonl").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            raise TerminalError("disk on fire")
        self.lines += [json.dumps(r) for r in rows.to_pylist()]

    def commit(self, batch_id):
        self.out.mkdir(exist_ok=True)
        self.final(batch_id).write_text("".join(x + "\n" for x in self.lines))


def _ctx(tmp_path: Path) -> SinkContext:
    return SinkContext("p", "out", "q", str(tmp_path / "ckpt"), str(tmp_path), sleep=lambda s: None,
                       where="p.yaml:4:5")


def _frame(spark, n: int):
    rows = [(i, f"name-{i}") for i in range(n)]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "id bigint, name string")


def _visible(out: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(out.glob("p*.jsonl")) for x in f.read_text().splitlines()]


def test_write_path_decision():
    assert write_path("print") == ("driver", "prints on the driver's console")
    assert write_path("mysql")[0] == write_path("kafka")[0] == write_path("elasticsearch")[0] == "executors"
    assert write_path("file")[0] == "spark-writer"


def test_failed_partition_is_redone_alone_and_nothing_is_committed(spark, tmp_path):
    spec = FileSinkSpec(id="out", type="file", path="out", format="jsonl", batch_size=3)
    (tmp_path / "fail").write_text("4")
    with pytest.raises(SinkFailed) as e:
        PartitionFiles(spec, _ctx(tmp_path)).write_batch(_frame(spark, 10), 4)
    assert str(e.value) == "sink 'out' (p.yaml:4:5): write of 3 rows failed: disk on fire (terminal error, not retried)"
    assert e.value.sink_id == "out" and not e.value.unreachable
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["p0-4.jsonl"]  # partition 0 committed its part
    assert not PartitionFiles(spec, _ctx(tmp_path)).is_committed(4)  # the driver did not commit the batch
    (tmp_path / "fail").unlink()
    res = PartitionFiles(spec, _ctx(tmp_path)).write_batch(_frame(spark, 10), 4)
    assert (res.rows, res.skipped) == (5, False)  # partition 1's rows only: partition 0 skipped
    assert sorted(p.name for p in out.iterdir()) == ["p0-4.jsonl", "p1-4.jsonl"]
    assert sorted(r["id"] for r in _visible(out)) == list(range(10))
    again = PartitionFiles(spec, _ctx(tmp_path)).write_batch(_frame(spark, 10), 4)
    assert (again.rows, again.skipped) == (0, True)
    assert sorted(r["id"] for r in _visible(out)) == list(range(10))
