"""The file sink's publish of a local folder through Python's file functions (etl/components/sinks/file/localfs.py):
the Publisher's steps and recovery on LocalFiles, and its errors mapped as HadoopFiles maps Hadoop's."""

from __future__ import annotations

import pytest

from etl.components.sinks.file.hadoop import MANIFEST, Publisher
from etl.components.sinks.file.localfs import LocalFiles, local_folder
from etl.runtime.sink import TerminalError, TransientError


def _staged(tmp_path, pub: Publisher, batch: int, parts: dict[str, str]) -> None:
    stage = tmp_path / pub.staging(batch)
    stage.mkdir(parents=True)
    for name, text in parts.items():
        (stage / name).write_text(text)
    (stage / "_SUCCESS").write_text("")
    (stage / ".part-00001-x.json.crc").write_text("")


def test_local_uris_are_local_folders():
    assert local_folder("file:///data/out%20dir") == "/data/out dir"
    assert local_folder("file://localhost/data/out") == "/data/out"
    assert local_folder("file://host/data/out") is None  # another machine's
    assert local_folder("hdfs://nn:8020/data/out") is None
    assert LocalFiles("/data/out dir").uri("_staging/q-1") == "file:/data/out dir/_staging/q-1"


def test_a_batch_is_published_and_a_replay_finds_it(tmp_path):
    pub = Publisher(LocalFiles(str(tmp_path)), "q", "ab12", "jsonl")
    pub.prepare(3)
    _staged(tmp_path, pub, 3, {"part-00000-x.json": "", "part-00001-x.json": '{"a":1}\n{"a":2}\n'})
    pub.commit(3, rows=2)  # part 0 holds no row (Spark's writer leaves it beside the others): not published
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_etl_batches", "part-q-00000003-ab12-00000.jsonl"]
    assert (tmp_path / "part-q-00000003-ab12-00000.jsonl").read_text() == '{"a":1}\n{"a":2}\n'
    assert (tmp_path / "_etl_batches" / "q-00000003-ab12").read_text() == \
        "part-00001-x.json part-q-00000003-ab12-00000.jsonl\n"
    assert Publisher(LocalFiles(str(tmp_path)), "q", "ab12", "jsonl").recover(3) is True


def test_a_publish_cut_short_is_finished_and_leftovers_of_an_unpublished_batch_go(tmp_path):
    files = LocalFiles(str(tmp_path))
    pub = Publisher(files, "q", "ab12", "csv")
    _staged(tmp_path, pub, 7, {"part-00000-x.csv": "id\n1\n", "part-00001-x.csv": "id\n2\n"})
    stage = pub.staging(7)
    # the driver died after the manifest and the first rename
    files.write_text(f"{stage}/{MANIFEST}", "part-00000-x.csv part-q-00000007-ab12-00000.csv\n"
                                           "part-00001-x.csv part-q-00000007-ab12-00001.csv\n")
    files.rename(f"{stage}/part-00000-x.csv", "part-q-00000007-ab12-00000.csv")
    assert Publisher(files, "q", "ab12", "csv").recover(7) is True
    assert sorted(p.name for p in tmp_path.glob("part-*")) == ["part-q-00000007-ab12-00000.csv",
                                                                 "part-q-00000007-ab12-00001.csv"]
    assert not (tmp_path / "_staging").exists()
    # a batch staged without a manifest: its parts are written again, so they go
    _staged(tmp_path, pub, 8, {"part-00000-y.csv": "id\n3\n"})
    assert pub.recover(8) is False and not (tmp_path / pub.staging(8)).exists()


def test_errors_are_transient_or_terminal_as_hadoops(tmp_path):
    files = LocalFiles(str(tmp_path))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(TerminalError, match="cannot create"):
        files.mkdirs("afile/sub")
    with pytest.raises(TerminalError, match=r"^cannot create /proc/etl-x/sub: No such file or directory$"):
        LocalFiles("/proc/etl-x").mkdirs("sub")  # (a path the OS refuses: the contract tests' bad address)
    with pytest.raises(TransientError, match="rename of .*missing.* failed"):
        files.rename("missing", "other")  # (Hadoop's rename answers False)
    with pytest.raises(TerminalError, match="No such file"):
        files.length("missing")
    assert files.names("missing") == [] and not files.exists("missing")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    files.remove_empty("full")  # another batch stages there: it stays
    files.remove_empty("gone")
    assert (tmp_path / "full" / "x").exists()
    files.delete("full")
    files.delete("gone")
    assert not (tmp_path / "full").exists()
