"""The session etl builds: its launch defaults are in force, and Python runs over them."""

from __future__ import annotations

import socket

import pytest


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix domain sockets only")
def test_python_workers_are_reached_over_unix_domain_sockets(spark):
    assert spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled") == "true"

    def double(batches):
        import pyarrow.compute as pc

        for rb in batches:
            yield rb.set_column(0, "id", pc.multiply(rb.column(0), 2))

    got = spark.range(0, 5, 1, 2).mapInArrow(double, "id long").collect()
    assert sorted(r.id for r in got) == [0, 2, 4, 6, 8]
