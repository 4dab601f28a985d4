"""Python functions that get Spark Python workers of their own.

Spark keeps one pool of Python workers per (interpreter, environment), and a
Python function carries the SparkContext's environment as it was when the
function was made. Functions made inside `own_workers(spark, name)` carry
ETL_WORKER_POOL=name, so they run in a pool of their own, apart from the
generator source's readers and every other UDF.

The lookup transform uses it: each worker of its pool keeps the dimension
table in memory, and a pool of its own means only as many workers as tasks
run at once ever load it -- in a shared pool, workers take turns reading
events and looking them up, and each would load the table again.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any
from collections.abc import Iterator

POOL_VAR = "ETL_WORKER_POOL"
_LOCK = threading.Lock()


@contextlib.contextmanager
def own_workers(spark: Any, name: str) -> Iterator[None]:
    """Python functions (UDFs, mapInArrow) made inside run in the worker pool `name`."""
    try:
        env = spark.sparkContext.environment
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: the shared pool
        yield
        return
    with _LOCK:
        before = env.get(POOL_VAR)
        env[POOL_VAR] = name
        try:
            yield
        finally:
            if before is None:
                env.pop(POOL_VAR, None)
            else:
                env[POOL_VAR] = before
