"""A JVM prefilter for rule filters: rows that cannot match never travel to Python (keep mode) or
travel as NULLs (drop and tag modes: the matcher answers "no rule" for them at once).

Moving a row from the JVM to a Python worker and back (Arrow conversion, the
socket, pyspark's worker loop) costs more than matching it: about 3 us per
row of CPU against about 0.6 us for a 1,000-rule Hyperscan match. When a
program can only match rows whose text contains one of a few literals
(`etl.optimize.literals.program_literal_groups`: every rule needs one of its
patterns, every pattern needs one literal of each of a few sets), a keep filter first runs

    where(LiteralPrefilter.test(field, '<literal file name>') OR ...)

in the JVM (a static call in generated code; in a session without etl's jar on
its class path, the UDF `etl_literal_prefilter(cast(field AS binary), ...)`): one pass over the lower-cased ASCII bytes of the field looking for
each pattern's most selective need, one bit test per byte in a table that stays
in the CPU's caches (exact tables are read on a hit only), so its cost hardly
grows with the number of literals; a pattern's other needs (up to
PREFILTER_NEEDS in all, literals of 2 characters or more: ``ssh\\s+-R`` needs
"ssh" and "-r") are checked only on a hit of its first one. Rows with a
non-ASCII byte always pass (case folding and derivations are only simple on
ASCII; the matcher decides them), NULL values never match
through their field. What passes goes to the matcher as before, so the
result is the same row for row; only the work changes.

Both are one Java class (etl/jvm/LiteralPrefilter.java) in etl's jar
(etl/compile/jvm.py: compiled with `javac` on first use, on the class path of
sessions etl starts; added with `ADD JAR` to others, where the UDF is
registered as a temporary function). The literal sets go to the
executors with `SparkContext.addFile`, one file per set (named by its SHA-256,
so a reloaded program gets a new file), loaded once per executor JVM. Without
`javac` (or when any of this fails) filters run without the prefilter: the
reason is logged once (`etl.rules`, WARNING). The physical planner decides
whether a filter gets it and which form (etl.physical.engines: `prefilter-jvm`,
the static call; `prefilter-udf`; `no-prefilter`, e.g. with `ETL_PREFILTER=off`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from etl.physical.engines import PREFILTER_NEEDS, literal_groups  # noqa: F401  (re-exported: three needs per pattern)
from etl.compile import jvm
from etl.workercache import WorkerCache, owned_by

log = logging.getLogger("etl.rules")

FUNCTION = "etl_literal_prefilter"
CLASS = "etl.jvm.LiteralPrefilter"  # etl/jvm/LiteralPrefilter.java

_LOCK = threading.Lock()
_BODIES: WorkerCache[int, tuple[Any, str]] = WorkerCache("prefilter literal files", 64)  # id(groups) -> (groups, text)
_BROKEN: list[str] = []  # why the prefilter is unavailable in this process (logged once)


def _register(spark: Any) -> bool:
    """The UDF in this session (a streaming query's micro-batches run in a clone of the session it started
    from, so a function first needed after a hot reload is registered in the batch's own session)."""
    if _BROKEN:
        return False
    with _LOCK:
        try:
            # one call instead of a catalog lookup per micro-batch
            session = spark._jsparkSession.hashCode()
            sessions = owned_by(spark.sparkContext).setdefault("prefilter: JVM sessions holding the UDF", set())
            if session in sessions:
                return True
            if spark.catalog.functionExists(FUNCTION):
                sessions.add(session)
                return True
            from pyspark.sql.types import BooleanType

            from etl.compile import jvm

            if not jvm.available(spark):  # a session etl did not start: add the jar to it
                path = jvm.jar()
                if path is None:
                    raise RuntimeError(jvm.unavailable_reason() or "etl's jar could not be built")
                spark.sql(f"ADD JAR '{path}'")
            spark.udf.registerJavaFunction(FUNCTION, CLASS, BooleanType())
            sessions.add(session)
        except Exception as e:  # noqa: BLE001 - no JDK, no permission, ...: the filter still works without it
            detail = getattr(e, "stderr", b"") or b""
            _BROKEN.append(f"{e} {detail.decode(errors='replace')[:500]}".strip())
            log.warning("rule filters run without the JVM prefilter: %s", _BROKEN[0])
            return False
        return True


def _literal_file(spark: Any, groups: tuple) -> str:
    """The field's groups in a file (a line per group: its needs separated by spaces, a need's literals by
    commas, each hex-encoded), added to the SparkContext (etl.compile.jvm.ship_text); its name."""
    known = _BODIES.get(id(groups))
    if known is None or known[0] is not groups:
        body = "".join(" ".join(",".join(lit.encode("ascii").hex() for lit in sorted(need)) for need in group) + "\n"
                       for group in groups)
        known = _BODIES[id(groups)] = (groups, body)  # the groups object is kept, so its id is not reused meanwhile
    return jvm.ship_text(spark, "literals", known[1])


def literal_test(spark: Any, column: Any, groups: tuple, static: bool = True) -> Any:
    """The test of a string `column` for a field's literal groups: a static call in generated code (`static`:
    etl's jar is on the class path), else the UDF (the session must have it registered; the set file's name goes
    as a binary literal: the JVM gets the same array for every row, unconverted)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    name = _literal_file(spark, groups)
    if static:
        return F.coalesce(jvm.static_call(spark, CLASS, "test", BooleanType(), column, F.lit(name)), F.lit(False))
    return F.call_function(FUNCTION, column.cast("binary"), F.lit(bytearray(name.encode())))


def prefilter_condition(program: Any, df: Any, engine: str = "prefilter-jvm") -> Any:
    """The JVM condition every row the program can match satisfies, or None (the planner chose `no-prefilter`,
    a field that is not a string column in this frame, or the UDF could not be registered). `engine`: the
    physical plan's prefilter engine (prefilter-jvm: a static call; prefilter-udf: the UDF)."""
    if engine == "no-prefilter":
        return None
    # a tenth of a second for 10,000 rules: once per program (etl.physical.engines keeps it by digest)
    lits = literal_groups(program)
    if not lits:
        return None
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    top = {f.name: f.dataType for f in df.schema.fields}
    for field in lits:
        dtype = top.get(field)
        if dtype is None:  # a nested field (meta.host), or one the frame does not have
            try:
                dtype = df.select(F.col(field)).schema.fields[0].dataType
            except Exception:  # noqa: BLE001 - a field the frame does not have: the matcher reads it as null
                return None
        if not isinstance(dtype, StringType):
            return None
    spark = df.sparkSession  # in a micro-batch: the query's clone of the session, where the UDF must be
    static = engine == "prefilter-jvm"
    if not static and not _register(spark):
        return None
    cond = None
    for field, ls in sorted(lits.items()):
        c = literal_test(spark, F.col(field), ls, static)
        cond = c if cond is None else cond | c
    return cond
