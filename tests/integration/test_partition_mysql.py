"""The mysql sink on the executors: one transaction per partition with its marker row in it; a replayed batch
skips the partitions that committed and writes the others; rows a partition's server refuses come back to the
driver as dead letters. Against the real MariaDB."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from etl.components.sinks.mysql.build import MySQLSink
from etl.runtime.sink import SinkContext, SinkFailed, TerminalError

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]


def setup_module(module):
    from pyspark import cloudpickle  # the sink class below travels to the executors by value

    cloudpickle.register_pickle_by_value(module)


class FlakyMySQL(MySQLSink):
    """Partition 1 fails (terminal) while the flag file exists, once partition 0's marker is committed."""

    flag = ""
    shipped = ("flag",)  # set on the driver's instance, copied to the partitions'

    def batch_insert(self, rows):
        import os

        if self.ctx.partition == 1 and os.path.exists(self.flag):
            deadline = time.monotonic() + 60
            while not self._partition_0_done() and time.monotonic() < deadline:
                time.sleep(0.1)
            raise TerminalError("disk on fire")
        super().batch_insert(rows)

    def _partition_0_done(self) -> bool:
        import pymysql

        s = self.spec
        conn = pymysql.connect(host=s.host, port=int(s.port), user=s.user, password=s.password, database=s.database)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM _etl_commits WHERE pipeline=%s AND query='q.p0'", (self.ctx.pipeline,))
                return cur.fetchone()[0] > 0
        finally:
            conn.close()


def test_a_replay_skips_committed_partitions_and_redoes_the_others(spark, mariadb_server, tmp_path):
    s = mariadb_server
    table, name = f"p_{uuid.uuid4().hex[:8]}", f"part_{uuid.uuid4().hex[:6]}"
    from etl import registry

    options = {"id": "out", "inputs": ["x"], "type": "mysql", "host": s.host, "port": s.port, "user": s.user,
               "password": s.password, "database": s.database, "table": table, "create_table": True,
               "key": ["id"], "batch_size": 7, "retry": {"max_attempts": 1}}
    spec = registry.lookup("sink", "mysql").spec.model_validate(options)
    flag = tmp_path / "fail"
    flag.write_text("1")

    def sink(cls=FlakyMySQL):
        ctx = SinkContext(name, "out", "q", str(tmp_path / "ckpt"), str(tmp_path), sleep=lambda x: None,
                          where="p.yaml:3:3")
        out = cls(spec, ctx)
        out.flag = str(flag)
        return out

    rows = [(i, f"n{i}") for i in range(40)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "id bigint, name string")
    with pytest.raises(SinkFailed, match=r"^mysql sink 'out' \(p.yaml:3:3\): write of 7 rows failed: disk on fire"):
        sink().write_batch(df, 0)
    conn = s.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT id FROM `{table}` ORDER BY id")
            assert [r[0] for r in cur.fetchall()] == list(range(20))  # partition 0 committed with its marker
            flag.unlink()
            res = sink().write_batch(df, 0)
            assert (res.rows, res.skipped) == (20, False)  # partition 1 only
            assert sink().write_batch(df, 0).skipped
            conn.commit()
            cur.execute(f"SELECT id FROM `{table}` ORDER BY id")
            assert [r[0] for r in cur.fetchall()] == list(range(40))
            cur.execute("SELECT query, batch_id, rows_written FROM _etl_commits WHERE pipeline=%s ORDER BY query",
                        (name,))
            assert cur.fetchall() == (("q.p0", 0, 20), ("q.p1", 0, 20))
    finally:
        conn.close()


def test_rows_a_partition_refuses_are_dead_letters(spark, mariadb_server, tmp_path):
    s = mariadb_server
    table, name = f"r_{uuid.uuid4().hex[:8]}", f"rej_{uuid.uuid4().hex[:6]}"
    conn = s.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{table}` (id INT PRIMARY KEY, name VARCHAR(3) NOT NULL) ENGINE=InnoDB")
    conn.commit()
    from etl import registry

    spec = registry.lookup("sink", "mysql").spec.model_validate(
        {"id": "out", "inputs": ["x"], "type": "mysql", "host": s.host, "port": s.port, "user": s.user,
         "password": s.password, "database": s.database, "table": table})
    ctx = SinkContext(name, "out", "q", str(tmp_path / "ckpt"), str(tmp_path))
    rows = [(i, "toolong" if i in (3, 14) else f"n{i}") for i in range(16)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "id int, name string")
    res = MySQLSink(spec, ctx).write_batch(df, 0)
    assert res.rows == 16  # rows handed to the sink, as on the driver: 14 stored, 2 dead letters
    dead = [json.loads(x) for f in (tmp_path / "dead_letters").glob("part-*.jsonl") for x in f.read_text().splitlines()]
    assert sorted((d["stage"], json.loads(d["payload"])["id"]) for d in dead) == [("out", 3), ("out", 14)]
    assert all(d["reason"].startswith("mysql 1406: Data too long for column 'name'") for d in dead)
    with conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM `{table}`")
        assert cur.fetchone()[0] == 14
    conn.close()
