"""Lookup against a MariaDB dimension table (the mysql source's reader), both stores, with refresh."""

from __future__ import annotations

import functools
import time
import uuid

import pytest

from etl.compile.lookups import store as ls
from etl.compile.lookups.dimension import Dimension, lookup_join
from etl.components.sources.mysql.spec import MySQLSource
from tests.windows.batches_source import write_batches
from tests.lookup.test_lookup_spark import events_stream, run, spec
from tests.windows.harness import rows_of

pytestmark = [pytest.mark.spark, pytest.mark.servers]


def test_mysql_table_both_stores_and_refresh(spark, tmp_path, mariadb_server):
    from pyspark.sql import functions as F

    from etl.components.sources.mysql.build import read_mysql_table

    table = "users_" + uuid.uuid4().hex[:8]
    conn = mariadb_server.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id VARCHAR(10) PRIMARY KEY, name VARCHAR(50), tier BIGINT)")
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", [("u1", "Ann", 1), ("u2", "", None)])
    conn.commit()
    src_spec = MySQLSource.model_validate({
        "id": "users", "type": "mysql", "host": mariadb_server.host, "port": mariadb_server.port,
        "database": mariadb_server.database, "user": mariadb_server.user, "password": mariadb_server.password,
        "table": table, "schema": {"id": "string", "name": "string", "tier": "bigint"}})
    ls.drop_cached()
    batches = [[{"user": "u1", "n": 0, "name": "e"}, {"user": "u2", "n": 1, "name": "e"},
                {"user": "u3", "n": 2, "name": "e"}]]
    ev, path = events_stream(spark, tmp_path, batches, "mysql")
    frames, refreshers = [], []
    for store in ("broadcast", "rocksdb"):
        dim = Dimension("users", columns=src_spec.schema_, reader=functools.partial(read_mysql_table, src_spec))
        res = lookup_join(ev, dim, spec(how="left", store=store, refresh="1s"), base_dir=str(tmp_path / store))
        refreshers.append(res.refresher.start())
        frames.append(res.df.withColumn("_variant", F.lit(store)))
    q, out = run(spark, frames[0].unionByName(frames[1]), tmp_path)
    try:
        q.processAllAvailable()
        rows = rows_of(spark.table(out))
        for store in ("broadcast", "rocksdb"):
            got = sorted((r["user"], r["users_name"], r["tier"]) for r in rows if r["_variant"] == store)
            # the table's `name` clashes with the events' own: added as <table>_name; "" stays apart from NULL
            assert got == [("u1", "Ann", 1), ("u2", "", None), ("u3", None, None)], store
        with conn.cursor() as cur:
            cur.execute(f"UPDATE {table} SET tier = 9 WHERE id = 'u1'")
        conn.commit()
        deadline, seen = time.time() + 90, {}
        while time.time() < deadline and seen != {"broadcast": 9, "rocksdb": 9}:
            time.sleep(1.2)
            batches.append([{"user": "u1", "n": 10 + len(batches), "name": "e"}])
            write_batches(path, batches)
            q.processAllAvailable()
            rows = rows_of(spark.table(out))
            last = max(r["n"] for r in rows)
            seen = {r["_variant"]: r["tier"] for r in rows if r["n"] == last}
        assert seen == {"broadcast": 9, "rocksdb": 9}
    finally:
        q.stop()
        for r in refreshers:
            r.stop()
        conn.close()
