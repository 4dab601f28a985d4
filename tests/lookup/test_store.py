"""The rocksdict dimension store and the per-batch join, without Spark."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

from etl.compile import lookup_store as ls
from etl.compile.lookup import LK, join_batch
from tests.lookup.reference import ref_join

TABLE = [
    {"id": "u1", "name": "Ann", "tier": 1, "score": 1.5},
    {"id": "u2", "name": "", "tier": None, "score": 2.0},  # empty string is not NULL
    {"id": "u3", "name": None, "tier": 3, "score": None},
    {"id": "u4", "name": 'quote " and, comma', "tier": 4, "score": -1.0},
    {"id": "u5", "name": "dup-a", "tier": 5, "score": 5.0},
    {"id": "u5", "name": "dup-b", "tier": 6, "score": 6.0},  # two rows for one key
    {"id": None, "name": "no key", "tier": 0, "score": 0.0},
]
SCHEMA = pa.schema([("id", pa.string()), ("name", pa.string()), ("tier", pa.int64()), ("score", pa.float64())])
EVENTS = [{"user": u, "n": i} for i, u in enumerate(["u1", "u2", "u9", None, "u3", "u5", "u4", "u1", "u7"])]


def write_csv(path: Path, rows: list[dict]) -> None:
    """NULL as an unquoted empty field, text always quoted (so "" is the empty string)."""

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, str):
            return '"' + v.replace('"', '""') + '"'
        return str(v)

    lines = ["id,name,tier,score"] + [",".join(cell(r[c]) for c in ("id", "name", "tier", "score")) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def source(tmp_path: Path, rows=TABLE, refresh=None, name="users") -> ls.TableSource:
    path = tmp_path / f"{name}.csv"
    if not path.exists():
        write_csv(path, rows)
    return ls.TableSource(name, str(path), "csv", ("id",), ("name", "tier", "score"), SCHEMA,
                          refresh_s=refresh, base_dir=str(tmp_path / "stores"))


def batch_of(events: list[dict]) -> pa.RecordBatch:
    b = pa.RecordBatch.from_pylist(events, schema=pa.schema([("user", pa.string()), ("n", pa.int64())]))
    return pa.RecordBatch.from_arrays(list(b.columns) + [b.column(0)], names=["user", "n", LK])


@pytest.fixture(autouse=True)
def _fresh_cache():
    ls.drop_cached()
    yield
    ls.drop_cached()


def test_read_table_keeps_empty_strings_apart_from_nulls(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,name,tier,score\n"u1","",1,1.0\n"u2",,2,\n')
    t = ls.read_table(ls.TableSource("t", str(path), "csv", ("id",), ("name", "tier", "score"), SCHEMA))
    assert t.to_pylist() == [{"id": "u1", "name": "", "tier": 1, "score": 1.0},
                             {"id": "u2", "name": None, "tier": 2, "score": None}]


@pytest.mark.parametrize("inner", [True, False])
def test_join_batch_matches_reference(tmp_path, inner):
    src = source(tmp_path)
    table = ls.read_table(src)
    meta = ls.build_store(table, src.keys, tmp_path / "store")
    assert meta["rows"] == 6 and meta["duplicates"] and meta["encoding"] == "csv"
    store = ls.LookupStore(tmp_path / "store")
    out = join_batch(batch_of(EVENTS), store, inner, ("name", "tier", "score"))
    want = ref_join(EVENTS, table.to_pylist(), {"user": "id"}, ["name", "tier", "score"], inner)
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(map(key, out.to_pylist())) == sorted(map(key, want))
    assert [r["n"] for r in out.to_pylist()] == sorted(r["n"] for r in out.to_pylist())  # event order kept
    store.close()


def test_line_breaks_in_values_use_json(tmp_path):
    t = pa.table({"id": ["a", "b"], "txt": ["two\nlines", None]})
    meta = ls.build_store(t, ("id",), tmp_path / "s")
    assert meta["encoding"] == "json"
    store = ls.LookupStore(tmp_path / "s")
    b = pa.RecordBatch.from_arrays([pa.array(["b", "a", "c"]), pa.array(["b", "a", "c"])], names=["k", LK])
    assert join_batch(b, store, False, ("txt",)).to_pylist() == [
        {"k": "b", "txt": None}, {"k": "a", "txt": "two\nlines"}, {"k": "c", "txt": None}]


def test_multi_column_keys(tmp_path):
    t = pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"], "v": [10, 11, 20]})
    ls.build_store(t, ("a", "b"), tmp_path / "s")
    store = ls.LookupStore(tmp_path / "s")
    keys = ls.key_array(pa.table({"a": [1, 2, None], "b": ["y", "x", "x"]}), ("a", "b")).combine_chunks()
    b = pa.RecordBatch.from_arrays([pa.array([0, 1, 2]), keys], names=["i", LK])
    assert join_batch(b, store, False, ("v",)).to_pylist() == [{"i": 0, "v": 11}, {"i": 1, "v": 20},
                                                              {"i": 2, "v": None}]


def test_store_is_smaller_than_csv(tmp_path):
    n = 50_000
    rows = [{"id": f"u{i:07d}", "name": f"name-{i % 977}", "tier": i % 5, "score": round(i * 0.37, 2)}
            for i in range(n)]
    src = source(tmp_path, rows)
    dest = ls.ensure_version(src, ls.source_version(src))
    meta = json.loads((dest / "meta.json").read_text())
    assert meta["rows"] == n
    assert ls.dir_mb(dest / "db") < Path(src.path).stat().st_size / 1e6


def test_refresh_swaps_version_without_blocking(tmp_path):
    src = source(tmp_path, refresh=0.2)
    s1 = ls.store_for(src)
    assert s1.get_many([b"u1"])[0] is not None and s1.get_many([b"u8"])[0] is None
    time.sleep(0.05)
    write_csv(Path(src.path), TABLE + [{"id": "u8", "name": "new", "tier": 8, "score": 8.0}])
    deadline = time.time() + 30
    while time.time() < deadline:
        s = ls.store_for(src)  # never blocks: the old version answers until the new one is built
        if s.get_many([b"u8"])[0] is not None:
            break
        time.sleep(0.1)
    assert ls.store_for(src).get_many([b"u8"])[0] is not None
    assert len([p for p in ls.table_dir(src).iterdir() if p.is_dir()]) <= 2


def test_one_build_per_host_version(tmp_path):
    src = source(tmp_path)
    v = ls.source_version(src)
    d1 = ls.ensure_version(src, v)
    mtime = (d1 / "meta.json").stat().st_mtime_ns
    assert ls.ensure_version(src, v) == d1 and (d1 / "meta.json").stat().st_mtime_ns == mtime


def test_reads_go_through_the_configured_block_cache(tmp_path):
    """The store's block cache is the one configured (rocksdict would open the default column family with the
    options recorded on disk: an 8 MB cache, every random lookup decompressing a block), and lookups fill it."""
    src = source(tmp_path)
    store = ls.LookupStore(ls.ensure_version(src, ls.source_version(src)), cache_mb=48)
    assert store.db.property_int_value("rocksdb.block-cache-capacity") == 48 << 20
    before = store.db.property_int_value("rocksdb.block-cache-usage")
    assert store.get_many([b"u1", b"u4"])[0] is not None
    assert store.db.property_int_value("rocksdb.block-cache-usage") > before
    store.close()


def test_automatic_cache_holds_the_store_uncompressed():
    assert ls.cache_size_mb(64, {"raw_mb": 400.0}) == 64  # asked for
    assert ls.cache_size_mb(0, {"raw_mb": 400.0}) == 508  # raw size + 25 % + 8 MB
    assert ls.cache_size_mb(0, {"raw_mb": 1.0}) == ls.MIN_CACHE_MB
    assert ls.cache_size_mb(0, {"raw_mb": 1e6}) == ls.MAX_AUTO_CACHE_MB
    assert ls.cache_size_mb(0, {}) == 256  # a store built before raw sizes were recorded
