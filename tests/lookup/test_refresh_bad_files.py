"""A lookup table rewritten badly while the pipeline runs: every reader (a broadcast worker's copy, the rocksdb
store of Python workers, the JVM's store through the driver) keeps its last good version and warns once per
bad version; a table that does not read at start is E400 at the table's `path:`. No JVM."""

from __future__ import annotations

import logging
import textwrap
import time
from pathlib import Path

import pytest

from etl import workercache
from etl.compile.lookups import dimension as dm
from etl.compile.lookups import store as ls
from tests.lookup.test_store import TABLE, has, source, write_csv

NEW = TABLE + [{"id": "u8", "name": "new", "tier": 8, "score": 8.0}]


def bad_versions(path: Path) -> list[tuple[str, str]]:
    """(what was done to the file, the reason the warning gives)."""
    return [("truncated", ""), ("partial", 'id,name,tier,score\n"u1","Ann",1,1.5\n"u2","Bo'),
            ("garbage", "\x00\x01PK\x03\x04 not a table\n\x7f\x80")]


def rewrite(path: Path, text: str) -> None:
    time.sleep(0.01)  # a new mtime even on coarse clocks
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


WANT = {"truncated": "the file is empty (0 bytes)", "partial": "Expected 4 columns, got 2",
        "garbage": "Column 'id' in include_columns does not exist in CSV file"}


@pytest.fixture(autouse=True)
def _fresh():
    workercache.clear_all()  # the open stores (closed), the tables read and the bad versions warned about
    yield
    workercache.clear_all()


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "etl.lookup" and r.levelno == logging.WARNING]


def test_broadcast_copy_keeps_last_good_then_takes_the_fixed_table(tmp_path, caplog):
    src = source(tmp_path, refresh=0.0)
    path = Path(src.path)
    assert dm.cached_table(src).num_rows == len(TABLE)
    for n, (what, text) in enumerate(bad_versions(path), 1):
        rewrite(path, text)
        for _ in range(2):  # read twice: one warning per bad version
            assert dm.cached_table(src).column("id").to_pylist() == [r["id"] for r in TABLE], what
        got = warnings_of(caplog)
        assert len(got) == n, got
        assert got[-1].startswith(f"lookup table 'users': the new version of {path} does not read as a table (")
        assert WANT[what] in got[-1], got[-1]
    # a worker process started while the file is bad answers from the host's last good copy
    dm._TABLES.clear()
    assert dm.cached_table(src).num_rows == len(TABLE)
    write_csv(path, NEW)
    assert dm.cached_table(src).column("id").to_pylist()[-1] == "u8"
    assert len(warnings_of(caplog)) == 3


def test_rocksdb_store_keeps_last_good_then_swaps_to_the_fixed_table(tmp_path, caplog):
    src = source(tmp_path, refresh=0.05)
    path = Path(src.path)
    assert has(ls.store_for(src), "u1")

    def settle() -> ls.LookupStore:
        for _ in range(3):  # the refresh interval passes, a swap (if any) runs to its end
            time.sleep(0.06)
            ls.store_for(src)
            pending = ls._CACHE[src.cache_key()].pending
            if pending is not None:
                pending.join(30)
        return ls.store_for(src)

    for n, (what, text) in enumerate(bad_versions(path), 1):
        rewrite(path, text)
        s = settle()
        assert has(s, "u1") and has(s, "u5") and not has(s, "u8"), what
        got = warnings_of(caplog)
        assert len(got) == n and WANT[what] in got[-1], got
    # a Python worker opening the table while its file is bad opens the last store built on this host
    ls.drop_cached()
    assert has(ls.store_for(src), "u4")
    assert len(warnings_of(caplog)) == 3  # that version was warned already in this process
    write_csv(path, NEW)
    assert has(settle(), "u8")


def test_jvm_refresh_keeps_the_loaded_version(tmp_path, caplog):
    """The driver's step for a table in the JVM: a bad version is never published (its build fails first)."""
    from etl.compile.lookups.jvm import JvmTable

    src = source(tmp_path)
    table = JvmTable(src, 0, ls.source_version(src))
    loaded = table.version
    for n, (_what, text) in enumerate(bad_versions(Path(src.path)), 1):
        rewrite(Path(src.path), text)
        table.follow(spark=None)  # a good version would be published to the JVM; a bad one never gets there
        table.follow(spark=None)
        assert table.version == loaded
        assert len(warnings_of(caplog)) == n


PIPELINE = """\
name: lk
sources:
  - {id: ev, type: file, path: in, format: jsonl, schema: {user: string}}
  - id: users
    type: file
    path: users.FMT
    format: FMT
    static: true
transforms:
  - {id: enrich, type: lookup, input: ev, table: users, on: {user: id}}
sinks:
  - {id: out, type: print, input: enrich}
"""


@pytest.mark.parametrize("fmt, text, reason", [
    ("csv", "", "the file is empty (0 bytes)"),
    ("jsonl", "", "the file is empty (0 bytes)"),
    ("csv", "\n", "Empty CSV file"),
    ("parquet", "not parquet", "Parquet magic bytes not found"),
])
def test_a_table_that_does_not_read_at_start_is_e400_at_its_path(tmp_path, fmt, text, reason):
    from etl.check import check_file
    from etl.compile.context import CompileContext, CompileError
    from etl.components.transforms.lookup.build import dimension

    (tmp_path / "in").mkdir()
    (tmp_path / f"users.{fmt}").write_text(text)
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent(PIPELINE).replace("FMT", fmt))
    c = check_file(p)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    graph = c.plan.graph
    with pytest.raises(CompileError) as e:
        dimension(CompileContext(None, graph), graph.node("enrich"))
    d = e.value.diagnostic(graph)
    assert (d.code, d.span.line, d.span.col) == ("E400", 6, 11)
    assert d.message.startswith(f"lookup 'enrich': table 'users': {tmp_path / ('users.' + fmt)} does not read as a "
                                f"{fmt} table: ")
    assert reason in d.message
    assert d.hint == "write the table's file in full (header and rows), or point `path:` at one that is"
