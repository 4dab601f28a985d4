"""Lookups of rocksdb-stored tables inside the JVM (etl/jvm/LookupTables.java), on local masters.

The store is the same one the Python workers read (etl/compile/lookups/store.py);
the driver builds it (this host is the executors' host on a local master) and
has the JVM load it once: flat arrays shared by every task, found by key hash.
Each event's key (its text, as `event_key` builds it) is looked up in generated
code by a static call: no row leaves the JVM, no Python worker holds the table.

A table whose keys are unique (and that is not refreshed) gives a struct per
event (NULL when nothing matches); otherwise an array of matches is exploded
(inner) or exploded keeping events without one (left). With `refresh`, a driver
thread re-checks the source every interval; a changed table is built into a
new store version, loaded, and swapped in between two lookups: tasks never wait.

`jvm_lookup` returns None when this path cannot serve the lookup (not a local
master, etl's jar not on the class path, a key or value type it does not hold,
or no room in the JVM heap: logged; or the planner's choice, e.g. ETL_LOOKUP_JVM=off); the lookup then runs
in Python workers.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from etl.compile import jvm
from etl.compile.deadletter import fence
from etl.compile.lookups.columns import event_key, spark_type
from etl.compile.lookups.store import (TableSource, TableUnreadable, ensure_version, keep_last_good, known_bad,
                                       source_version, table_dir)

log = logging.getLogger("etl.lookup")

CLASS = "etl.jvm.LookupTables"
# event key columns whose text Spark's cast gives exactly as the table's reader writes it
KEY_TYPES = frozenset({"string", "integer", "long", "short", "byte", "boolean", "date"})


@dataclass
class JvmTable:
    """A table published to the JVM: its handle (a literal in the plan) and the version it holds."""

    src: TableSource
    handle: int
    version: str

    def follow(self, spark: Any) -> None:
        """Publish the source's current version when it changed (the driver's refresh step)."""
        version = source_version(self.src)
        if version == self.version or known_bad(self.src, version):
            return
        try:
            publish(spark, self.src, version, self.handle)
        except TableUnreadable as e:  # the loaded version keeps answering
            keep_last_good(self.src, version, e)
            return
        self.version = version


def _held(t: Any) -> bool:
    """The Arrow types LookupTables.Column holds."""
    import pyarrow as pa

    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_signed_integer(t)
            or pa.types.is_float64(t) or pa.types.is_float32(t) or pa.types.is_boolean(t) or pa.types.is_date32(t)
            or (pa.types.is_timestamp(t) and t.unit == "us") or (pa.types.is_decimal(t) and t.bit_width == 128))


def publish(spark: Any, src: TableSource, version: str, handle: int) -> dict:
    """Build `version` of the store (if this host has not yet), load it into the JVM as `handle`; its meta."""
    dest = ensure_version(src, version)
    meta = json.loads((dest / "meta.json").read_text())
    jt = spark.sparkContext._jvm.etl.jvm.LookupTables
    if jt.version(handle) != str(dest):
        raw = int(float(meta.get("raw_mb", 0)) * 1e6) or 1
        jt.publish(handle, str(dest), int(meta["rows"]), raw)
    return meta


def jvm_lookup(events: Any, src: TableSource, ev_keys: list[str], values: list[str], renamed: dict[str, str],
               how: str, refresh: bool, lk: str) -> tuple[Any, Callable[[], None] | None] | None:
    """(the joined frame, the driver's refresh step or None), or None when the JVM cannot serve it."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StructType

    spark = events.sparkSession  # the planner chose this engine (settings, master, jar: etl.physical.engines)
    types = {f.name: f.dataType.typeName() for f in events.schema.fields}
    if any(types.get(k) not in KEY_TYPES for k in ev_keys):
        return None
    if src.schema is None or not all(_held(src.schema.field(c).type) for c in values):
        return None
    version = source_version(src)
    handle = spark.sparkContext._jvm.etl.jvm.LookupTables.handle(str(table_dir(src)))
    try:
        meta = publish(spark, src, version, handle)
    except Exception as e:  # noqa: BLE001 - py4j: no room in the heap, an unreadable store ...
        log.warning("lookup of table '%s' runs in Python workers: %s", src.name, " ".join(str(e).split())[:400])
        return None
    table = JvmTable(src, handle, version)
    struct = StructType.fromDDL(", ".join(f"`{c}` {spark_type(src.schema.field(c).type)}" for c in values))
    key = event_key(events, ev_keys)
    if meta["duplicates"] or refresh:  # a key may have several rows (now or after a refresh): explode
        found = jvm.static_call(spark, CLASS, "all", ArrayType(struct, False), key, F.lit(handle))
        df = events.withColumn(lk, F.explode(found) if how == "inner" else F.explode_outer(found))
    else:
        df = events.withColumn(lk, fence(jvm.static_call(spark, CLASS, "one", struct, key, F.lit(handle))))
        if how == "inner":
            df = df.where(F.col(lk).isNotNull())
    out = df.select(*[F.col(f"`{c}`") for c in events.columns],
                    *[F.col(lk).getField(c).alias(renamed[c]) for c in values])
    return out, ((lambda: table.follow(spark)) if refresh else None)
