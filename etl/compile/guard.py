"""Row errors of expressions become dead letters: the guard around every expression a pipeline writes.

Spark 4 runs with ANSI SQL on: a bad cast, a division by zero, an unparsable
timestamp or an overflow throws, and a throwing row used to fail the task and
stop the query. Every expression of a stage (derive and select columns, filter
`expr`, route conditions, window inputs and `having`, lookup and join keys) is
compiled through `Guards.wrap`: etl's Catalyst expression etl.jvm.Guarded
(etl/jvm/Guarded.java) evaluates it inside try/catch, in the generated code,
and yields struct<value, error>. The stage then splits its rows (`Guards.split`):
rows with an error go to dead letters with the reason

    <file>:<line>:<col>: <stage type> '<id>' <what>: <ERROR_CLASS>: <first line of Spark's message>

(the position of the expression in the pipeline file) and the original row as
JSON; the other rows go on with exactly the values they would have had.

Guards cost CPU (bench/guard.py), so stages evaluated per micro-batch run
optimistically: unguarded first, and when a batch fails with a row-level data
error (`row_error`: SQLSTATE class 22, ArithmeticException, DateTimeException)
the runner evaluates it again inside `guarding()` (sinks commit each batch id
once, so nothing is written twice) and keeps guarding the query's next few
batches. Stages compiled into the streaming plan (upstream of windows, joins,
lookups, dedupe) are always guarded: a failure there cannot be retried.

Without etl's jar (no JDK) the guard is Catalyst's TryEval: the stream never
stops either, but the reason only says the expression failed (a warning says so
once).
"""

from __future__ import annotations

import logging
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import etl.compile.jvm as jvm
from etl.compile.context import ERR, PAYLOAD, CompileContext
from etl.compile.deadletter import fence
from etl.graph.model import Node
from etl.workercache import owned_by

log = logging.getLogger("etl.guard")
GUARD_CLASS = "etl.jvm.Guarded"
UNGUARDED_REASON = "the expression failed on this row (etl's JVM guard is unavailable, so Spark's error is unknown)"
_MODE = threading.local()
GUARDED_BATCHES = 10  # after a batch failed on a row, its query's next batches run guarded (no failed attempt)
# a row-level data error in a failed job's text: SQLSTATE class 22 (data exception: cast, division by zero,
# overflow, datetime), or a plain Java arithmetic / number / datetime exception
# or a pipeline's Python function that raised on a row (etl.compile.functions)
ROW_ERROR = re.compile(r"SQLSTATE: 22[0-9A-Z]{3}|java\.lang\.ArithmeticException|java\.lang\.NumberFormatException"
                       r"|java\.time\.(?:format\.)?DateTime(?:Parse)?Exception|USER_RAISED_EXCEPTION\] python function '")


def active(df: Any) -> bool:
    """Guard the expressions of a stage over `df`? Always in the streaming plan; per micro-batch inside
    `guarding()` (the retry of a batch that failed on a row), or always with ETL_GUARD_OPTIMISTIC=off."""
    return getattr(_MODE, "on", False) or df.isStreaming or jvm.switched_off("ETL_GUARD_OPTIMISTIC")


@contextmanager
def guarding(on: bool = True):
    """Stages evaluated in this thread (a query's foreachBatch) guard their expressions."""
    before = getattr(_MODE, "on", False)
    _MODE.on = on
    try:
        yield
    finally:
        _MODE.on = before


def row_error(exc: BaseException) -> bool:
    """Did a job fail because an expression threw on a row (which guards turn into a dead letter)?"""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if ROW_ERROR.search(str(e)):
            return True
        e = e.__cause__ or e.__context__
    return False


def guarded(spark: Any, column: Any) -> Any:
    """struct<value, error> of `column`: never NULL, never throwing."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    j = spark.sparkContext._jvm
    utils = j.org.apache.spark.sql.classic.ExpressionUtils
    expr = utils.expression(column._jc)
    if jvm.available(spark):
        klass = j.java.lang.Class.forName(GUARD_CLASS, True, j.java.lang.ClassLoader.getSystemClassLoader())
        return Column(utils.column(klass.getConstructors()[0].newInstance(_array(spark, [expr]))))
    facts = owned_by(spark.sparkContext)
    if not facts.get("guard: warned the jar is missing"):  # once per Spark context (a run's session)
        facts["guard: warned the jar is missing"] = True
        log.warning("etl's JVM functions are unavailable (%s): a row whose expression fails still goes to dead "
                    "letters, but its reason cannot name Spark's error", jvm.unavailable_reason() or "no jar")
    tried = Column(utils.column(j.org.apache.spark.sql.catalyst.expressions.TryEval(
        utils.expression(F.struct(column.alias("value"))._jc))))
    return F.struct(tried.getField("value").alias("value"),
                    F.when(tried.isNull(), F.lit(UNGUARDED_REASON)).alias("error"))


def _array(spark: Any, items: list[Any]) -> Any:
    gateway = spark.sparkContext._gateway
    arr = gateway.new_array(gateway.jvm.java.lang.Object, len(items))
    for i, x in enumerate(items):
        arr[i] = x
    return arr


def position(ctx: CompileContext, node: Node, *keys: Any) -> str:
    """`file:line:col` of the node's field `keys` in the pipeline file (the node's own position if unknown)."""
    try:
        span = node.field_span(ctx.graph.smap, *keys)
    except Exception:  # noqa: BLE001 - a missing position is not worth failing for
        span = node.span
    return str(span)


@dataclass
class Guards:
    """The guarded expressions of one stage over its input `df`, each a hidden struct column."""

    ctx: CompileContext
    node: Node
    df: Any  # the stage's input: its row is the payload of a dead letter
    hidden: list[str] = field(default_factory=list)
    reasons: list[Any] = field(default_factory=list)

    def wrap(self, frame: Any, column: Any, keys: tuple[Any, ...], what: str) -> tuple[Any, Any]:
        """`frame` with `column` guarded in a hidden column, and the column of its value."""
        from pyspark.sql import functions as F

        name = f"_etl_g{len(self.hidden)}_{self.node.id}"
        self.hidden.append(name)
        frame = frame.withColumn(name, fence(guarded(self.ctx.spark, column)))
        err = F.col(f"`{name}`.error")
        prefix = f"{position(self.ctx, self.node, *keys)}: {self.node.type} '{self.node.id}' {what}: "
        self.reasons.append(F.when(err.isNotNull(), F.concat(F.lit(prefix), err)))
        return frame, F.col(f"`{name}`.value")

    @property
    def reason(self) -> Any:
        """The first failure of the row (NULL when none failed)."""
        from pyspark.sql import functions as F

        return self.reasons[0] if len(self.reasons) == 1 else F.coalesce(*self.reasons)

    def payload(self, originals: dict[str, str] | None = None) -> Any:
        """The input row as JSON (`originals`: input columns the stage replaced -> the hidden copy holding them)."""
        from pyspark.sql import functions as F

        originals = originals or {}
        return F.to_json(F.struct(*[F.col(f"`{originals.get(c, c)}`").alias(c) for c in self.df.columns]))

    def shared(self, frame: Any, keep: list[Any], originals: dict[str, str] | None = None) -> Any:
        """`frame`'s columns `keep` (names or columns) plus ERR/PAYLOAD (see etl.compile.deadletter.from_shared)."""
        from pyspark.sql import functions as F

        reason = self.reason
        return frame.select(*[F.col(f"`{c}`") if isinstance(c, str) else c for c in keep], reason.alias(ERR),
                            F.when(reason.isNotNull(), self.payload(originals)).alias(PAYLOAD))
