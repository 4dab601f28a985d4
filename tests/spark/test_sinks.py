"""AbstractSink (batching, flushing, retries, idempotency) and the file sink; mostly without a JVM.

Rows of one micro-batch reach a sink in no particular order (partitions arrive as they finish)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from etl.components.sinks.file.build import FileSink, lines_bytes
from etl.runtime.sink import SinkContext, SinkFailed
from etl.components.sinks.file.spec import FileSink as FileSinkSpec
from etl.components.sinks.print.spec import PrintSink as PrintSinkSpec
from tests.spark.faults import FlakySink


def ctx(tmp_path, sink_id="s", **kw):
    return SinkContext("p", sink_id, "q", str(tmp_path / "ckpt"), str(tmp_path), sleep=lambda s: None, **kw)


def batches(n, size=7):
    for start in range(0, n, size):
        ids = list(range(start, min(n, start + size)))
        yield pa.RecordBatch.from_pydict({"id": ids, "name": [f"n{i}" for i in ids]})


def spec(**kw):
    return PrintSinkSpec(id="s", type="print", **kw)


def test_chunks_are_at_most_batch_size_and_every_row_is_written(tmp_path):
    sink = FlakySink(spec(batch_size=10), ctx(tmp_path))
    res = sink.write_arrow(batches(95), 0, pa.schema([("id", pa.int64()), ("name", pa.string())]))
    assert res.rows == 95 and max(sink.chunks) <= 10 and sum(sink.chunks) == 95
    assert sorted(r["id"] for r in sink.rows) == list(range(95))
    assert sink.commits == [0]


def test_flush_by_memory_cap_writes_before_batch_size(tmp_path):
    sink = FlakySink(spec(batch_size=1000, max_buffer=200), ctx(tmp_path))
    sink.write_arrow(batches(50), 0, pa.schema([]))
    assert len(sink.chunks) > 1 and max(sink.chunks) < 50


def test_flush_by_interval(tmp_path):
    sink = FlakySink(spec(batch_size=1000, flush_interval=0), ctx(tmp_path))
    sink.write_arrow(batches(21), 0, pa.schema([]))
    assert sink.chunks == [7, 7, 7]


def test_transient_errors_are_retried_with_backoff(tmp_path):
    waits = []
    c = SinkContext("p", "s", "q", str(tmp_path / "ckpt"), str(tmp_path), sleep=waits.append)
    sink = FlakySink(spec(batch_size=100, retry={"max_attempts": 5, "initial_backoff": "100ms", "max_backoff": "300ms"}),
                     c, fail_times=3)
    res = sink.write_arrow(batches(10), 4, pa.schema([]))
    assert res.retries == 3 and res.rows == 10 and len(sink.rows) == 10
    assert waits == [0.1, 0.2, 0.3]


def test_retries_run_out_with_a_clear_message(tmp_path):
    sink = FlakySink(spec(retry={"max_attempts": 2}), ctx(tmp_path), fail_times=5)
    with pytest.raises(SinkFailed, match=r"sink 's': write of 10 rows failed after 2 attempts .*injected fault"):
        sink.write_arrow(batches(10), 0, pa.schema([]))
    assert not sink.is_committed(0)


def test_terminal_errors_are_not_retried(tmp_path):
    sink = FlakySink(spec(), ctx(tmp_path), terminal=True)
    with pytest.raises(SinkFailed, match="terminal error, not retried"):
        sink.write_arrow(batches(3), 0, pa.schema([]))
    assert sink.attempts == 1


def test_a_committed_batch_is_never_written_twice(tmp_path):
    sink = FlakySink(spec(), ctx(tmp_path))
    sink.write_arrow(batches(5), 3, pa.schema([]))
    again = FlakySink(spec(), ctx(tmp_path))  # a restarted process replays batch 3
    res = again.write_arrow(batches(5), 3, pa.schema([]))
    assert res.skipped and again.rows == [] and again.attempts == 0
    assert not again.write_arrow(batches(5), 4, pa.schema([])).skipped


def test_lines_bytes_is_every_string_plus_newline():
    arr = pa.chunked_array([["a", "bé"], [], ["{\"x\":1}"]])
    assert lines_bytes(arr) == "a\nbé\n{\"x\":1}\n".encode()
    assert lines_bytes(pa.array([], pa.string())) == b""
    assert lines_bytes(pa.array(["x", "y", "z"]).slice(1)) == b"y\nz\n"


def test_file_sink_parquet_is_atomic_and_idempotent(tmp_path):
    s = FileSinkSpec(id="f", type="file", path="out", format="parquet", batch_size=4)
    sink = FileSink(s, ctx(tmp_path, "f"))
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])

    def failing():
        yield from batches(5)
        raise RuntimeError("executor lost")

    with pytest.raises(RuntimeError):
        sink.write_arrow(failing(), 0, schema)
    assert os.listdir(tmp_path / "out") == []  # the half-written temporary file is gone
    sink.write_arrow(batches(10), 0, schema)
    files = os.listdir(tmp_path / "out")
    assert files == ["part-q-00000000-0.parquet"]
    assert pq.read_table(tmp_path / "out" / files[0]).num_rows == 10
    assert FileSink(s, ctx(tmp_path, "f")).write_arrow(batches(10), 0, schema).skipped


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_file_sink_formats_through_spark(spark, tmp_path, fmt):
    df = spark.createDataFrame([(1, "a,b", [1, 2]), (2, None, [])], "id bigint, txt string, xs array<int>")
    s = FileSinkSpec(id="f", type="file", path="out", format=fmt)
    res = FileSink(s, ctx(tmp_path, "f")).write_batch(df, 7)
    assert res.rows == 2
    # Spark's writer: one part per partition (local[2]: two partitions of one row), and the batch's manifest
    names = sorted(os.listdir(tmp_path / "out"))
    assert names == ["_etl_batches", f"part-q-00000007-0-00000.{fmt}", f"part-q-00000007-0-00001.{fmt}"]
    names = names[1:]
    manifest = (tmp_path / "out" / "_etl_batches" / "q-00000007-0").read_text().splitlines()
    assert [line.split(" ")[1] for line in manifest] == names
    paths = [tmp_path / "out" / n for n in names]
    if fmt == "jsonl":
        got = [json.loads(x) for p in paths for x in p.read_text().splitlines()]
        assert sorted(got, key=lambda r: r["id"]) == [{"id": 1, "txt": "a,b", "xs": [1, 2]}, {"id": 2, "xs": []}]
    elif fmt == "csv":
        parts = [p.read_text().splitlines() for p in paths]
        assert all(lines[0] == "id,txt,xs" for lines in parts)
        assert sorted(line for lines in parts for line in lines[1:]) == ['1,"a,b","[1,2]"', "2,,[]"]
    else:
        got = [r for p in paths for r in pq.read_table(p).to_pylist()]
        assert sorted(got, key=lambda r: r["id"]) == [{"id": 1, "txt": "a,b", "xs": [1, 2]},
                                                   {"id": 2, "txt": None, "xs": []}]


@pytest.mark.spark
def test_a_query_survives_transient_sink_errors_and_fails_clearly_on_terminal_ones(spark, tmp_path):
    from etl.runtime.runner import PipelineRun, RunFailed, RunOptions
    from tests.spark.helpers import checked

    c = checked(tmp_path, """
        name: t-faults
        sources: [{id: g, type: generator, count: 300, fields: {id: {sequence: 0}}}]
        sinks:
          - {id: out, type: print, input: g, batch_size: 100, retry: {max_attempts: 4, initial_backoff: 10ms}}
    """)
    made: list[FlakySink] = []

    def run(**kw):
        def factory(out, spec, ctx):
            made.append(FlakySink(spec, ctx, **kw))
            return made[-1]

        r = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(tmp_path / f"ck{len(made)}"),
                                                  progress="none", sink_factory=factory))
        r.start()
        r.wait()

    run(fail_times=3)  # three injected faults, each retried
    assert sorted(x["id"] for x in made[-1].rows) == list(range(300)) and made[-1].attempts == 6
    with pytest.raises(RunFailed, match=r"sink 'out'.*: write of 100 rows failed: table etl.events does not exist"):
        run(terminal=True)
