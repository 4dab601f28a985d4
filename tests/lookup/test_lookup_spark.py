"""Lookup joins on a streaming source: broadcast and rocksdb stores, inner and left, and refresh
of the table while the query runs."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from etl.compile.lookups import store as ls
from etl.compile.lookups.dimension import Dimension, lookup_join
from etl.components.transforms.lookup.spec import LookupTransform
from tests.windows.batches_source import write_batches
from tests.lookup.reference import ref_join
from tests.lookup.test_store import TABLE, write_csv
from tests.windows.harness import rows_of

pytestmark = pytest.mark.spark

EVENTS = [[{"user": u, "n": i + 10 * b, "name": "event-name"} for i, u in enumerate(us)]
          for b, us in enumerate([["u1", "u2", "u9", None], ["u3", "u5", "u4", "u1", "u7"]])]
SCHEMA = "user string, n bigint, name string"


def spec(**kw) -> LookupTransform:
    return LookupTransform.model_validate({"id": "enrich", "type": "lookup", "inputs": ["ev"], "table": "users",
                                           "on": {"user": "id"}, **kw})


def events_stream(spark, tmp_path, batches, name="ev"):
    path = tmp_path / f"{name}.json"
    write_batches(path, batches)
    return spark.readStream.format("etl_test_batches").option("path", str(path)).option("schema", SCHEMA).load(), path


@pytest.fixture(params=["jvm", "python"])
def rocksdb_path(request, monkeypatch):
    """The rocksdb store's two lookup paths: in the JVM (local masters) and in Python workers (clusters)."""
    monkeypatch.setenv("ETL_LOOKUP_JVM", "on" if request.param == "jvm" else "off")
    return request.param


def in_jvm(df) -> bool:
    return "LookupTables" in df._jdf.queryExecution().analyzed().toString()


def run(spark, df, tmp_path):
    table = "l_" + uuid.uuid4().hex[:8]
    q = (df.writeStream.format("memory").queryName(table).option("checkpointLocation", str(tmp_path / table))
         .trigger(processingTime="0 seconds").start())
    return q, table


def test_broadcast_and_rocksdb_inner_and_left(spark, tmp_path, rocksdb_path):
    from pyspark.sql import functions as F

    csv = tmp_path / "users.csv"
    write_csv(csv, TABLE)
    dim = Dimension("users", str(csv), "csv")
    ev, _ = events_stream(spark, tmp_path, EVENTS)
    frames = []
    for store in ("broadcast", "rocksdb"):
        for how in ("inner", "left"):
            res = lookup_join(ev, dim, spec(how=how, store=store, fields=["name", "tier", "score"]),
                              base_dir=str(tmp_path / "stores"))
            assert res.store == store and res.renamed == {"name": "users_name", "tier": "tier", "score": "score"}
            assert in_jvm(res.df) == (store == "rocksdb" and rocksdb_path == "jvm")
            if res.source is not None:
                res.prepare()
            frames.append(res.df.withColumn("_variant", F.lit(f"{store}-{how}")))
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    q, table = run(spark, union, tmp_path)
    q.processAllAvailable()
    q.stop()
    rows = rows_of(spark.table(table))
    flat = [e for b in EVENTS for e in b]
    renamed = {"name": "users_name", "tier": "tier", "score": "score"}
    for variant in ("broadcast-inner", "broadcast-left", "rocksdb-inner", "rocksdb-left"):
        got = [{k: v for k, v in r.items() if k != "_variant"} for r in rows if r["_variant"] == variant]
        want = ref_join(flat, TABLE, {"user": "id"}, ["name", "tier", "score"], variant.endswith("inner"), renamed)
        key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
        assert sorted(map(key, got)) == sorted(map(key, want)), variant


def test_refresh_while_running(spark, tmp_path, rocksdb_path, caplog):
    """Both stores pick up a changed table between micro-batches without a restart (the rocksdb store in the
    JVM through the driver's refresher, in Python workers by themselves); a file truncated or written in part
    meanwhile leaves the last good table answering, and the query running."""
    from pyspark.sql import functions as F

    ls.drop_cached()
    csv = tmp_path / "users.csv"
    write_csv(csv, TABLE)
    ev, path = events_stream(spark, tmp_path, [[{"user": "u1", "n": 0, "name": "x"}]], "refresh")
    frames, refreshers = [], []
    for store in ("broadcast", "rocksdb"):
        res = lookup_join(ev, Dimension("users", str(csv), "csv"),
                          spec(how="left", store=store, refresh="1s", fields=["tier"]),
                          base_dir=str(tmp_path / "stores"))
        # the driver follows the table for the JVM's store, and reads a broadcast file table to warn of bad versions
        assert (res.refresher is not None) == (store == "broadcast" or rocksdb_path == "jvm")
        if res.refresher is not None:
            refreshers.append(res.refresher.start())
        frames.append(res.df.withColumn("_variant", F.lit(store)))
    q, table = run(spark, frames[0].unionByName(frames[1]), tmp_path)
    try:
        q.processAllAvailable()
        assert {r["_variant"]: r["tier"] for r in rows_of(spark.table(table))} == {"broadcast": 1, "rocksdb": 1}
        batches = [[{"user": "u1", "n": 0, "name": "x"}]]
        for bad in ("", 'id,name,tier,score\n"u1","Ann",1'):  # truncated, then written in part: the old table answers
            csv.write_text(bad)
            time.sleep(1.2)
            batches.append([{"user": "u1", "n": len(batches), "name": "x"}])
            write_batches(path, batches)
            q.processAllAvailable()
            last = [r for r in rows_of(spark.table(table)) if r["n"] == len(batches) - 1]
            assert {r["_variant"]: r["tier"] for r in last} == {"broadcast": 1, "rocksdb": 1}, bad
        said = [r.getMessage() for r in caplog.records if r.name == "etl.lookup"]
        assert f"lookup table 'users': the new version of {csv} does not read as a table (the file is empty (0 " \
               f"bytes)): the last good version keeps answering until it does" in said, said  # the driver's console
        write_csv(csv, [dict(r, tier=100 + (r["tier"] or 0)) if r["id"] == "u1" else r for r in TABLE])
        deadline = time.time() + 90
        seen: dict = {}
        while time.time() < deadline and seen != {"broadcast": 101, "rocksdb": 101}:
            time.sleep(1.2)
            batches.append([{"user": "u1", "n": len(batches), "name": "x"}])
            write_batches(path, batches)
            q.processAllAvailable()
            last = max(r["n"] for r in rows_of(spark.table(table)))
            seen = {r["_variant"]: r["tier"] for r in rows_of(spark.table(table)) if r["n"] == last}
        assert seen == {"broadcast": 101, "rocksdb": 101}
        assert q.isActive
    finally:
        q.stop()
        for r in refreshers:
            r.stop()


def test_driver_read_table_snapshot_and_refresh(spark, tmp_path, rocksdb_path):
    """A table read on the driver (mysql's path: a pyarrow reader) goes through parquet snapshots;
    the driver's refresher writes new ones and both stores follow."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    ls.drop_cached()
    state = {"tier": 1}

    def reader():
        return pa.table({"id": ["u1", "u2"], "tier": pa.array([state["tier"], 2], pa.int64())})

    ev, path = events_stream(spark, tmp_path, [[{"user": "u1", "n": 0, "name": "x"}]], "snap")
    frames, refreshers = [], []
    for store in ("broadcast", "rocksdb"):
        res = lookup_join(ev, Dimension(f"dim_{store}", reader=reader, columns={"id": "string", "tier": "bigint"}),
                          spec(how="inner", store=store, refresh="1s"), base_dir=str(tmp_path / "stores"))
        refreshers.append(res.refresher.start())
        frames.append(res.df.withColumn("_variant", F.lit(store)))
    q, table = run(spark, frames[0].unionByName(frames[1]), tmp_path)
    try:
        q.processAllAvailable()
        assert {r["_variant"]: r["tier"] for r in rows_of(spark.table(table))} == {"broadcast": 1, "rocksdb": 1}
        state["tier"] = 7
        batches = [[{"user": "u1", "n": 0, "name": "x"}]]
        deadline = time.time() + 90
        seen: dict = {}
        while time.time() < deadline and seen != {"broadcast": 7, "rocksdb": 7}:
            time.sleep(1.2)
            batches.append([{"user": "u1", "n": len(batches), "name": "x"}])
            write_batches(path, batches)
            q.processAllAvailable()
            rows = rows_of(spark.table(table))
            last = max(r["n"] for r in rows)
            seen = {r["_variant"]: r["tier"] for r in rows if r["n"] == last}
        assert seen == {"broadcast": 7, "rocksdb": 7}
    finally:
        q.stop()
        for r in refreshers:
            r.stop()


def test_a_table_column_differing_in_case_is_renamed(spark, tmp_path):
    """Name and name side by side were an ambiguous reference at run (Spark resolves names case-insensitively): the
    table's is renamed users_name, as validate says (tests/unit/test_join_names.py). Analysis only."""
    csv = tmp_path / "users.csv"
    write_csv(csv, TABLE)
    write_batches(tmp_path / "ev.json", [])
    ev = (spark.readStream.format("etl_test_batches").option("path", str(tmp_path / "ev.json"))
          .option("schema", "user string, n bigint, Name string").load())
    res = lookup_join(ev, Dimension("users", str(csv), "csv"), spec(store="broadcast", fields=["name", "tier"]),
                      base_dir=str(tmp_path / "stores"))
    assert res.renamed == {"name": "users_name", "tier": "tier"}
    assert res.df.columns == ["user", "n", "Name", "users_name", "tier"]
