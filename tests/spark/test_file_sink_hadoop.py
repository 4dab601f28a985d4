"""The file sink through Hadoop's FileSystem API (etl/components/sinks/file/hadoop.py): Spark's writer stages a
batch, the driver publishes it (manifest, renames, `_etl_batches/`).

Paths: a `file://` URI, and `viewfs://etltest/...`, Hadoop's ViewFileSystem (the client-side mount table of
HDFS federation) whose fallback link is the local root: a real Hadoop FileSystem of another scheme that Python's
file functions cannot open, so every byte goes through the FileSystem API. Replays: a driver killed after the
staging write (before the manifest) and one killed in the middle of the publish, with a reader polling the
published manifests all along: it never sees a partial batch, and the replay ends with exactly the input rows.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from etl.components.sinks.file.build import FileSink
from etl.components.sinks.file.hadoop import HadoopFiles, hadoop_uri
from etl.runtime.sink import SinkContext, SinkFailed
from etl.components.sinks.file.spec import FileSink as FileSinkSpec

pytestmark = pytest.mark.spark
VIEWFS = "fs.viewfs.mounttable.etltest.linkFallback"


@pytest.fixture
def viewfs(spark):
    """viewfs://etltest/<local path> is <local path>, through ViewFileSystem (the session's Hadoop conf)."""
    spark.conf.set(VIEWFS, "file:///")  # session settings reach the Hadoop conf of the driver and of the writers
    yield "viewfs://etltest"
    spark.conf.unset(VIEWFS)


def _ctx(tmp_path: Path) -> SinkContext:
    return SinkContext("p", "out", "q", str(tmp_path / "ckpt"), str(tmp_path), sleep=lambda s: None,
                       where="p.yaml:4:5")


def _frame(spark, lo: int, n: int, parts: int = 2):
    rows = [(i, f"name-{i}") for i in range(lo, lo + n)]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, parts), "id bigint, name string")


def _parts(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("part-*"))


def _ids(out: Path, names: list[str]) -> list[int]:
    return sorted(json.loads(x)["id"] for n in names for x in (out / n).read_text().splitlines())


def _published(out: Path) -> dict[str, list[int]]:
    """A reader that honours the manifests: each published batch and the ids of the parts it lists."""
    got = {}
    for m in sorted((out / "_etl_batches").glob("q-*")):
        names = [line.split(" ")[1] for line in m.read_text().splitlines()]
        got[m.name] = _ids(out, names)
    return got


def test_paths_are_hadoop_uris():
    assert hadoop_uri("out", lambda p: f"/base/{p}") == "file:///base/out"
    assert hadoop_uri("hdfs://nn:8020/data/out/", str) == "hdfs://nn:8020/data/out"
    assert hadoop_uri("file:///x/y", str) == "file:///x/y"


@pytest.mark.parametrize("scheme", ["file", "viewfs"])
def test_batches_are_written_through_the_file_system_api(spark, tmp_path, viewfs, scheme):
    out = tmp_path / ("out dir" if scheme == "file" else "out")  # (a space: the writer and the publish agree)
    path = f"file://{out}" if scheme == "file" else f"{viewfs}{out}"
    spec = FileSinkSpec(id="out", type="file", path=path, format="jsonl")
    sink = FileSink(spec, _ctx(tmp_path))
    files = sink.publisher.files  # a local folder is published with Python's file functions (no py4j round trip)
    assert (files.root if scheme == "file" else files.fs.getClass().getName()) == {
        "file": out, "viewfs": "org.apache.hadoop.fs.viewfs.ViewFileSystem"}[scheme]
    assert (sink.write_batch(_frame(spark, 0, 6), 0).rows, sink.write_batch(_frame(spark, 6, 4), 1).rows) == (6, 4)
    assert _parts(out) == ["part-q-00000000-0-00000.jsonl", "part-q-00000000-0-00001.jsonl",
                           "part-q-00000001-0-00000.jsonl", "part-q-00000001-0-00001.jsonl"]
    assert _published(out) == {"q-00000000-0": list(range(6)), "q-00000001-0": list(range(6, 10))}
    assert not (out / "_staging").exists()
    again = FileSink(spec, _ctx(tmp_path)).write_batch(_frame(spark, 0, 6), 1)  # a replay of a published batch
    assert (again.rows, again.skipped) == (0, True)
    assert _ids(out, _parts(out)) == list(range(10))


def test_an_empty_batch_publishes_no_part(spark, tmp_path):
    spec = FileSinkSpec(id="out", type="file", path="out", format="csv")
    res = FileSink(spec, _ctx(tmp_path)).write_batch(_frame(spark, 0, 0), 3)
    assert (res.rows, res.skipped) == (0, False)
    assert _parts(tmp_path / "out") == [] and _published(tmp_path / "out") == {"q-00000003-0": []}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_an_empty_partition_publishes_no_part(spark, tmp_path, fmt):
    """Spark's writer writes a file for partition 0 even when it has no rows (the others' empty partitions
    write none): that part is not published (and goes with the staging folder)."""
    spec = FileSinkSpec(id="out", type="file", path="out", format=fmt)
    rows = spark.createDataFrame(spark.sparkContext.parallelize([(1, "a"), (2, "b")], 4), "id bigint, name string")
    assert rows.rdd.glom().map(len).collect() == [0, 1, 0, 1]
    assert FileSink(spec, _ctx(tmp_path)).write_batch(rows, 0).rows == 2
    out = tmp_path / "out"
    names = [f"part-q-00000000-0-0000{n}.{fmt}" for n in (0, 1)]
    assert _parts(out) == names and not (out / "_staging").exists()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        assert [pq.read_table(out / n).to_pylist() for n in names] == [[{"id": 1, "name": "a"}],
                                                                       [{"id": 2, "name": "b"}]]
    else:
        assert [(out / n).read_text() for n in names] == (['{"id":1,"name":"a"}\n', '{"id":2,"name":"b"}\n']
                                                          if fmt == "jsonl" else ["id,name\n1,a\n", "id,name\n2,b\n"])
    assert [ln.split(" ")[1] for ln in (out / "_etl_batches" / "q-00000000-0").read_text().splitlines()] == names


class Killed(BaseException):
    """The driver dies (not an Exception: nothing catches it on the way out)."""


class DiesBeforeManifest(FileSink):
    """The driver dies after Spark's writer staged the batch, before the manifest."""

    def commit_batch(self, batch_id):
        raise Killed("driver killed after the staging write")


class DiesInPublish(FileSink):
    """The driver dies after the first rename of the publish; renames are slow, so a reader polls in between."""

    @property
    def publisher(self):
        pub = FileSink.publisher.fget(self)
        files = pub.files
        if not getattr(files, "rigged", False):
            rename, done = files.rename, []

            def slow_rename(src, dst):
                time.sleep(0.3)
                if dst.startswith("part-") and any(d.startswith("part-") for d in done):
                    raise Killed("driver killed in the publish")
                rename(src, dst)
                done.append(dst)

            files.rename, files.rigged = slow_rename, True
        return pub


class Poller(threading.Thread):
    """Reads the published batches every few ms; records every batch it saw and its ids."""

    def __init__(self, out: Path):
        super().__init__(daemon=True)
        self.out = out
        self.seen: dict[str, set[tuple[int, ...]]] = {}
        self.reads = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                got = _published(self.out)
            except FileNotFoundError:  # the folder is not there yet
                got = {}
            for name, ids in got.items():
                self.seen.setdefault(name, set()).add(tuple(ids))
            self.reads += 1
            time.sleep(0.005)


def test_replays_after_a_driver_crash_never_show_a_partial_batch(spark, tmp_path):
    out = tmp_path / "out"
    spec = FileSinkSpec(id="out", type="file", path=str(out), format="jsonl")
    poller = Poller(out)
    poller.start()
    try:
        # batch 0: killed after the staging write; nothing is visible, the replay removes the staged parts
        with pytest.raises(Killed):
            DiesBeforeManifest(spec, _ctx(tmp_path)).write_batch(_frame(spark, 0, 8, parts=3), 0)
        staged = FileSink(spec, _ctx(tmp_path)).publisher.staging(0)
        assert len([p for p in (out / staged).glob("part-*")]) == 3 and _parts(out) == []
        assert FileSink(spec, _ctx(tmp_path)).write_batch(_frame(spark, 0, 8, parts=3), 0).rows == 8
        # batch 1: killed after one of its three parts was renamed; the replay finishes the publish
        with pytest.raises(Killed):
            DiesInPublish(spec, _ctx(tmp_path)).write_batch(_frame(spark, 8, 9, parts=3), 1)
        assert len(_parts(out)) == 3 + 1  # a reader listing part-* sees one part of batch 1 ...
        assert "q-00000001-0" not in _published(out)  # ... but batch 1 is not published
        res = FileSink(spec, _ctx(tmp_path)).write_batch(_frame(spark, 8, 9, parts=3), 1)
        assert (res.rows, res.skipped) == (0, True)  # finished by the recovery, not written again
        reads = poller.reads
        while poller.reads < reads + 2 and poller.is_alive():  # the reader sees the end state too
            time.sleep(0.01)
    finally:
        poller.stop.set()
        poller.join()
    assert _ids(out, _parts(out)) == list(range(17))
    assert _published(out) == {"q-00000000-0": list(range(8)), "q-00000001-0": list(range(8, 17))}
    assert poller.seen == {"q-00000000-0": {tuple(range(8))}, "q-00000001-0": {tuple(range(8, 17))}}
    assert poller.reads > 20
    assert not (out / "_staging").exists()


@pytest.mark.parametrize("count,jar", [("batchrows-jvm", True), ("observe", True), (None, True), (None, False)],
                         ids=["batchrows-jvm", "observe", "unplanned-jar", "unplanned-no-jar"])
def test_dead_letters_of_a_stage_come_back_from_the_written_frame(spark, tmp_path, monkeypatch, count, jar):
    """Counted by etl/jvm/BatchRows.java's filter or by DataFrame.observe (the physical plan's `count` engine, set
    by the runner): the same answer. A sink the plan does not list (the dead-letter sink) counts with BatchRows
    where the session has etl's jar, else with observe."""
    from etl.compile import jvm
    from etl.dead_letters import ERR, PAYLOAD

    if not jar:
        monkeypatch.setattr(jvm, "available", lambda spark: False)
    spec = FileSinkSpec(id="out", type="file", path="out", format="jsonl")
    df = spark.createDataFrame([(1, "a", None, None), (2, "b", "bad json", "{x"), (3, "c", None, None),
                                (4, "d", "bad value", None)],
                               f"id bigint, name string, {ERR} string, {PAYLOAD} string").repartition(2)
    sink = FileSink(spec, _ctx(tmp_path))
    sink.count_engine = count
    res, failed = sink.write_split(df, 0)
    assert sink.count_ran() == count or (count is None and sink.count_ran() == ("batchrows-jvm" if jar else "observe"))
    assert res.rows == 2
    assert sorted(failed.to_pylist(), key=str) == [{ERR: "bad json", PAYLOAD: "{x"}, {ERR: "bad value", PAYLOAD: None}]
    assert _ids(tmp_path / "out", _parts(tmp_path / "out")) == [1, 3]
    sink = FileSink(spec, _ctx(tmp_path))
    sink.count_engine = count
    res = sink.write_batch(df.drop(ERR, PAYLOAD), 1)
    assert res.rows == 4


def test_a_missing_file_system_fails_clearly(spark, tmp_path):
    spec = FileSinkSpec(id="out", type="file", path="nosuchfs://x/out", format="jsonl")
    with pytest.raises(SinkFailed, match=r"sink 'out' \(p.yaml:4:5\): recovery of the publish failed: "
                                         r"org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for "
                                         r"scheme \"nosuchfs\" \(terminal error, not retried\)"):
        FileSink(spec, _ctx(tmp_path)).write_batch(_frame(spark, 0, 2), 0)


def test_the_driver_side_files_are_raw_on_local_paths(spark, tmp_path):
    files = HadoopFiles(spark, f"file://{tmp_path}")
    files.write_text("a/b.txt", "hello\n")
    assert files.read_text("a/b.txt") == "hello\n" and files.names("a") == ["b.txt"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b.txt"]  # no .crc companion


@pytest.mark.parametrize("engine", ["spark-json", "json-jvm", "to_json"])
def test_jsonl_lines_are_the_same_whichever_renders_them(spark, tmp_path, engine):
    df = spark.createDataFrame([(1, "a\"b", [1, 2], None)], "id bigint, txt string, xs array<int>, n double")
    sink = FileSink(FileSinkSpec(id="out", type="file", path="out", format="jsonl"), _ctx(tmp_path))
    sink.json_engine = engine  # the physical plan's choice (set by the runner)
    assert sink.write_batch(df, 0).rows == 1
    assert sink.json_rendering() == engine
    out = tmp_path / "out"
    assert "".join((out / n).read_text() for n in _parts(out)) == '{"id":1,"txt":"a\\"b","xs":[1,2]}\n'
