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


class Ledger(AbstractSink):
    """A sink kept between batches (`live`) that carries, as the Kafka sink does, the last batch it committed:
    read once from its "server" (`<base>/ledger/p<partition>.jsonl`, one line per committed batch, the batch's
    ids in it) by a new instance, and kept up to date by its own commits. Every read of the ledger and every
    write is logged with the worker's pid (`<base>/events.log`)."""

    live = True

    def __init__(self, spec, ctx):
        super().__init__(spec, ctx)
        self.last: int | None = None
        self.ids: list[int] = []

    def _ledger(self) -> Path:
        return Path(self.ctx.base_dir) / "ledger" / f"p{self.ctx.partition}.jsonl"

    def _event(self, what: str, batch_id: int) -> None:
        import os

        with open(Path(self.ctx.base_dir) / "events.log", "a") as fh:
            fh.write(f"{what} {os.getpid()} {self.ctx.partition} {batch_id}\n")

    def is_committed(self, batch_id: int) -> bool:
        if self.ctx.partition is None:
            return super().is_committed(batch_id)
        if self.last is None:  # a new instance: what was committed, from the server
            ledger = self._ledger()
            lines = ledger.read_text().splitlines() if ledger.exists() else []
            self.last = max((json.loads(x)["batch"] for x in lines), default=-1)
            self._event("recover", batch_id)
        return batch_id <= self.last

    def mark_committed(self, batch_id: int) -> None:
        if self.ctx.partition is None:
            super().mark_committed(batch_id)

    def begin(self, batch_id, schema):
        self.ids = []

    def batch_insert(self, rows):
        self.ids += rows.column(0).to_pylist()

    def commit(self, batch_id):
        self._ledger().parent.mkdir(exist_ok=True)
        with open(self._ledger(), "a") as fh:
            fh.write(json.dumps({"batch": batch_id, "ids": self.ids}) + "\n")
        self.last = batch_id
        self._event("write", batch_id)


def _events(tmp_path: Path) -> list[tuple[str, int, int, int]]:
    return [(w, int(pid), int(part), int(b)) for w, pid, part, b in
            (x.split() for x in (tmp_path / "events.log").read_text().splitlines())]


def _ledger_ids(tmp_path: Path) -> list[int]:
    return sorted(i for f in (tmp_path / "ledger").glob("p*.jsonl") for x in f.read_text().splitlines()
                  for i in json.loads(x)["ids"])


def test_live_sink_rebuilds_its_state_after_its_worker_is_killed(spark, tmp_path):
    """Issue 42: partition sinks live across batches on their Python worker; a worker killed between two batches
    takes its sinks with it, and the next batch's new instance reads what was committed back from the server, so
    a replay of the last batch skips and the next batch writes, each id exactly once."""
    import os
    import signal

    spec = FileSinkSpec(id="out", type="file", path="out", format="jsonl")
    driver = Ledger(spec, _ctx(tmp_path))

    def batch(b: int):
        return driver.write_batch(spark.range(10 * b, 10 * b + 10, 1, 2), b)

    for b in range(6):
        assert batch(b).rows == 10
    ev = _events(tmp_path)
    writes = [e for e in ev if e[0] == "write"]
    assert sorted((part, b) for _, _, part, b in writes) == [(p, b) for p in (0, 1) for b in range(6)]
    _new_only_where_unseen(ev)
    carried = len(writes) - sum(1 for e in ev if e[0] == "recover")
    assert carried >= 4, ev  # (36 of 40 in 20 batches) most batches found their partition's sink on the worker that wrote it last
    # the workers are killed between two batches; the driver did not commit batch 5 (a crash before its marker)
    killed = {pid for _, pid, _, _ in ev}
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    _wait_reaped(killed)  # Spark takes an idle worker whose process is alive: a zombie still is, and its task fails
    driver._marker(5).unlink()
    replay = batch(5)
    assert (replay.rows, replay.skipped) == (0, False)  # both partitions skipped: their new sinks read the ledger
    assert batch(6).rows == 10
    after = _events(tmp_path)[len(ev):]
    assert not {pid for _, pid, _, _ in after} & {pid for _, pid, _, _ in ev}  # new workers
    assert sorted((w, part, b) for w, _, part, b in after if b == 5) == [("recover", 0, 5), ("recover", 1, 5)]
    assert sorted((part, b) for w, _, part, b in after if w == "write") == [(0, 6), (1, 6)]
    _new_only_where_unseen(after)
    assert _ledger_ids(tmp_path) == list(range(70))


def _wait_reaped(pids: set[int], timeout: float = 10.0) -> None:
    import os

    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                pids.discard(pid)
        time.sleep(0.02)
    assert not pids, f"workers {pids} not reaped by pyspark's daemon within {timeout}s"


def _new_only_where_unseen(events: list[tuple[str, int, int, int]]) -> None:
    """A partition's sink is new (reads the ledger) exactly when its worker has not written that partition yet."""
    seen: set[tuple[int, int]] = set()
    for what, pid, part, _ in events:
        assert (what == "recover") == ((pid, part) not in seen), events
        seen.add((pid, part))

