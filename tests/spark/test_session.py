"""The session etl builds: its launch defaults are in force, and Python runs over them."""

from __future__ import annotations

import socket


def test_python_workers_are_reached_over_unix_domain_sockets(spark):
    """Where the platform has them (Linux, macOS, CI); elsewhere Spark's TCP default stays."""
    want = "true" if hasattr(socket, "AF_UNIX") else None
    assert spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled", None) == want

    def double(batches):
        import pyarrow.compute as pc

        for rb in batches:
            yield rb.set_column(0, "id", pc.multiply(rb.column(0), 2))

    got = spark.range(0, 5, 1, 2).mapInArrow(double, "id long").collect()
    assert sorted(r.id for r in got) == [0, 2, 4, 6, 8]
