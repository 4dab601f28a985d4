"""The rocksdict dimension store and the per-batch join, without Spark."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

from etl.compile.lookups import store as ls
from etl.compile.lookups.dimension import LK, join_batch
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


def has(store: ls.LookupStore, key: str) -> bool:
    return len(store.lookup(pa.array([key]))[0]) > 0


@pytest.mark.parametrize("chunk_rows", [None, 1, 2])
@pytest.mark.parametrize("inner", [True, False])
def test_join_batch_matches_reference(tmp_path, inner, chunk_rows):
    src = source(tmp_path)
    table = ls.read_table(src)
    meta = ls.build_store(table, src.keys, tmp_path / "store", chunk_rows=chunk_rows)
    assert meta["rows"] == 6 and meta["duplicates"] and meta["format"] == ls.FORMAT
    assert meta["chunks"] == {None: 1, 1: 5, 2: 3}[chunk_rows]  # u5's two rows never split
    store = ls.LookupStore(tmp_path / "store")
    out = join_batch(batch_of(EVENTS), store, inner, ("name", "tier", "score"))
    want = ref_join(EVENTS, table.to_pylist(), {"user": "id"}, ["name", "tier", "score"], inner)
    assert out.to_pylist() == want  # event order, a key's rows in table order
    store.close()


@pytest.mark.parametrize("inner", [True, False])
def test_values_keep_their_text_and_types(tmp_path, inner):
    t = pa.table({"id": ["a", "b", "c"], "txt": ["two\nlines, \"quoted\"", None, ""],
                  "ts": pa.array([1_700_000_000_000_000, None, 0], pa.timestamp("us", tz="UTC")),
                  "d": pa.array([1, 2, None], pa.decimal128(10, 2)), "ok": [True, None, False]})
    ls.build_store(t, ("id",), tmp_path / "s")
    store = ls.LookupStore(tmp_path / "s")
    b = pa.RecordBatch.from_arrays([pa.array(["b", "a", "x", "c"]), pa.array(["b", "a", "x", "c"])], names=["k", LK])
    out = join_batch(b, store, inner, ("txt", "ts", "d", "ok"))
    assert out.schema.field("ts").type == pa.timestamp("us", tz="UTC") and out.schema.field("d").type == pa.decimal128(10, 2)
    rows = {r["id"]: r for r in t.to_pylist()}
    assert out.to_pylist() == [{"k": k, **{c: rows[k][c] if k in rows else None for c in ("txt", "ts", "d", "ok")}}
                               for k in ["b", "a", "x", "c"] if k in rows or not inner]


def test_colliding_hashes_never_match_another_key(tmp_path, monkeypatch):
    """Every key given the same hash: the stored keys decide (one chunk; the search range is every row)."""
    import numpy as np

    monkeypatch.setattr(ls, "key_hashes", lambda keys: np.zeros(len(keys), np.uint64))
    src = source(tmp_path)
    table = ls.read_table(src)
    meta = ls.build_store(table, src.keys, tmp_path / "s", chunk_rows=1)
    assert meta["chunks"] == 1
    store = ls.LookupStore(tmp_path / "s")
    out = join_batch(batch_of(EVENTS), store, False, ("name", "tier", "score"))
    assert out.to_pylist() == ref_join(EVENTS, table.to_pylist(), {"user": "id"}, ["name", "tier", "score"], False)


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
    assert has(s1, "u1") and not has(s1, "u8")
    time.sleep(0.05)
    write_csv(Path(src.path), TABLE + [{"id": "u8", "name": "new", "tier": 8, "score": 8.0}])
    deadline = time.time() + 30
    while time.time() < deadline:
        s = ls.store_for(src)  # never blocks: the old version answers until the new one is built
        if has(s, "u8"):
            break
        time.sleep(0.1)
    assert has(ls.store_for(src), "u8")
    assert len([p for p in ls.table_dir(src).iterdir() if p.is_dir()]) <= 2


def test_one_build_per_host_version(tmp_path):
    src = source(tmp_path)
    v = ls.source_version(src)
    d1 = ls.ensure_version(src, v)
    mtime = (d1 / "meta.json").stat().st_mtime_ns
    assert ls.ensure_version(src, v) == d1 and (d1 / "meta.json").stat().st_mtime_ns == mtime


def test_chunks_are_read_once_then_joined_into_one_table(tmp_path):
    rows = [{"id": f"u{i}", "name": f"n{i}", "tier": i, "score": float(i)} for i in range(100)]
    src = source(tmp_path, rows)
    dest = tmp_path / "s"
    assert ls.build_store(ls.read_table(src), src.keys, dest, chunk_rows=10)["chunks"] == 10
    store = ls.LookupStore(dest)
    ev, dim = store.lookup(pa.array(["u3", None, "u3"]))
    assert ev.tolist() == [0, 2] and dim.column("name").to_pylist() == ["n3", "n3"]
    assert store.reads == 1 and store.table is None  # one chunk read, kept
    store.lookup(pa.array(["u3"]))
    assert store.reads == 1
    ev, dim = store.lookup(pa.array(["nope"]))  # a missing key reads the chunk its hash falls in, if any
    assert len(ev) == 0 and dim.num_rows == 0 and store.reads <= 2
    ev, dim = store.lookup(pa.array([f"u{i}" for i in range(99, -1, -1)]))
    assert store.reads == 10 and store.table is not None and store.table.num_rows == 100
    assert dim.column("tier").to_pylist() == list(range(99, -1, -1)) and ev.tolist() == list(range(100))


def test_least_recently_used_chunks_leave_a_full_cache(tmp_path):
    rows = [{"id": f"u{i}", "name": f"n{i}", "tier": i, "score": float(i)} for i in range(100)]
    src = source(tmp_path, rows)
    ls.build_store(ls.read_table(src), src.keys, tmp_path / "s", chunk_rows=10)
    store = ls.LookupStore(tmp_path / "s")
    store.cache_bytes = 1  # room for the chunks one batch needs, no more
    for _ in range(2):
        ev, dim = store.lookup(pa.array([f"u{i}" for i in range(100)]))
        assert dim.column("name").to_pylist() == [f"n{i}" for i in range(100)]
        ev, dim = store.lookup(pa.array(["u7"]))
        assert dim.column("name").to_pylist() == ["n7"]
    assert store.table is None and store.reads == 10 + 9  # the 9 chunks u7 does not need went, came back once


def test_automatic_cache_holds_the_store_uncompressed():
    assert ls.cache_size_mb(64, {"raw_mb": 400.0}) == 64  # asked for
    assert ls.cache_size_mb(0, {"raw_mb": 400.0}) == 508  # raw size + 25 % + 8 MB
    assert ls.cache_size_mb(0, {"raw_mb": 1.0}) == ls.MIN_CACHE_MB
    assert ls.cache_size_mb(0, {"raw_mb": 1e6}) == ls.MAX_AUTO_CACHE_MB
    assert ls.cache_size_mb(0, {}) == 256  # a store built before raw sizes were recorded
