"""The JVM objects a micro-batch's planning uses, made once per SparkContext: each py4j round trip of the driver costs
about a millisecond (several on a loaded machine), and pyspark's convenience calls make several (a Column call
looks its function up by reflection first, `jvm.a.b.C` is a round trip per step, a Python list becomes a Java one
element by element, `persist` builds its StorageLevel anew). What does not change between micro-batches is kept
here (issue 42: etl's fixed cost per batch over plain Spark's):

* `persist(frame)`: Spark's MEMORY_AND_DISK level, looked up once (1 round trip instead of 18);
* `observe(frame, name, sql)`: an Observation of one SQL aggregate (its class, `functions.expr` and the empty
  Seq of further aggregates looked up once: 3 round trips instead of 10 to 18).

Both are kept in the SparkContext's facts (etl.workercache.owned_by): a new context starts without them.
"""

from __future__ import annotations

from typing import Any

from etl.workercache import owned_by


def _facts(sc: Any) -> dict[str, Any]:
    facts = owned_by(sc)
    if "jcalls" not in facts:
        jvm = sc._jvm
        facts["jcalls"] = {
            "level": getattr(jvm, "org.apache.spark.storage.StorageLevel").MEMORY_AND_DISK(),
            "observation": getattr(jvm, "org.apache.spark.sql.Observation"),
            "expr": getattr(jvm, "org.apache.spark.sql.functions").expr,
            "no_columns": getattr(jvm, "org.apache.spark.api.python.PythonUtils").toSeq(
                getattr(jvm, "java.util.ArrayList")()),
        }
    return facts["jcalls"]


def persist(frame: Any) -> Any:
    """`frame` persisted at Spark's MEMORY_AND_DISK (deserialized rows in memory, spilled to disk), as
    `frame.persist(StorageLevel.MEMORY_AND_DISK)` but in one round trip."""
    frame.is_cached = True
    frame._jdf.persist(_facts(frame.sparkSession.sparkContext)["level"])
    return frame


def observe(frame: Any, name: str, sql: str) -> tuple[Any, Any]:
    """(`frame` observed by a new pyspark Observation `name` of the one aggregate `sql` (SQL text, aliased), that
    Observation): as `frame.observe(Observation(name), F.expr(sql))`, in 3 round trips."""
    from pyspark.sql import DataFrame, Observation

    sc = frame.sparkSession.sparkContext
    got = _facts(sc)
    obs = Observation(name)
    obs._jvm = sc._jvm  # (what Observation._on sets: `get` reads the metrics through it)
    obs._jo = got["observation"](name)
    return DataFrame(frame._jdf.observe(obs._jo, got["expr"](sql), got["no_columns"]), frame.sparkSession), obs
