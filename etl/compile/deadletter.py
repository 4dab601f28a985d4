"""Rows that fail parsing or conversion: split a stage's output into good rows and dead letters.

A stage that can fail builds one frame holding every row plus ERR (the reason,
NULL for good rows) and PAYLOAD (the original text); `from_shared` splits it.
Dead letters carry the pipeline, the stage id, the reason, the payload and the
processing time.
"""

from __future__ import annotations

from typing import Any

from etl.compile.context import ERR, PAYLOAD, Built


def fence(expr: Any) -> Any:
    """`expr`, made opaque to the optimizer at the cost of one integer comparison.

    A stage's good rows are `where(ERR IS NULL)` over a projection computing an expensive
    value (a regex, a JSON parse). Spark pushes such filters below projections by copying the
    aliased expressions into the filter, which would run the regex twice per row; it also
    merges projections. Neither happens across a nondeterministic expression, and
    spark_partition_id() is the cheapest one."""
    from pyspark.sql import functions as F

    return F.when(F.spark_partition_id() >= 0, expr)


# (SQL text rather than Column calls: each Column call is py4j round trips, and these two run per micro-batch)
def dead_frame(shared: Any, pipeline: str, stage: str) -> Any:
    from etl.optimize.native_split import sql_string

    return shared.where(f"`{ERR}` IS NOT NULL").selectExpr(
        f"{sql_string(pipeline)} AS pipeline", f"{sql_string(stage)} AS stage", f"`{ERR}` AS reason",
        f"CAST(`{PAYLOAD}` AS STRING) AS payload", "current_timestamp() AS time")


def redacted_reasons(frame: Any) -> Any:
    """The dead-letter frame with values read from the environment (and URL passwords) hidden in its reasons,
    by the patterns of etl.secrets.redact run in the JVM: a reason is Spark's message about the row, built on
    an executor (a cast error quotes the expression's literal). The one place every dead letter passes before its
    sink (etl.runtime.runner)."""
    if frame is None:
        return frame
    from pyspark.sql import functions as F

    from etl.secrets import java_replacements

    reason = F.col("reason")
    for pattern, replacement in java_replacements():
        reason = F.regexp_replace(reason, F.lit(pattern), F.lit(replacement))
    return frame.withColumn("reason", reason)


OVER = "bytes is over the maximum record size of {cap} bytes (ETL_MAX_RECORD_MB); payload: its first 1024 characters"


def within_record_size(shared: Any, cap: int, columns: list[str] | None = None) -> Any:
    """`shared` (a stage's frame with ERR and PAYLOAD) with each row over `cap` bytes failed: its reason `record of N
    bytes is over the maximum record size of M bytes (ETL_MAX_RECORD_MB); payload: its first 1024 characters` and
    its payload those characters of its record (a single value: the value, in base64 when binary; else the values
    as JSON). The record: `columns` (a message's value), else the whole row; its size is its string and binary
    values' bytes and its malformed text's (PAYLOAD: a reader's corrupt record) together. The
    record-size guard of every source whose reader does not bound lines itself (etl/jvm/BoundedLines.java): csv and
    parquet files, Spark's text and json readers, kafka and rocketmq values (etl.connectors.sources.messages)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    fields = [f for f in shared.schema.fields if f.name not in (ERR, PAYLOAD) and (columns is None or f.name in columns)]
    measured = [f for f in fields if isinstance(f.dataType, (StringType, BinaryType))]
    if not measured:
        return shared
    # one SQL sum: 6 % of a bare json read's CPU (bench/json_read.py --size-guard; with Column calls coalesce and
    # greatest: 10 %)
    names = [f.name.replace("`", "``") for f in measured] + [PAYLOAD]
    size = F.expr(" + ".join(f"nvl(octet_length(`{c}`), 0L)" for c in names))  # (bigint: 2 GB values add up)
    if len(fields) == 1:
        value = F.col(f"`{fields[0].name}`")
        if isinstance(fields[0].dataType, BinaryType):  # its first 768 bytes: 1,024 characters of base64 (unchunked)
            text = F.translate(F.base64(F.substring(value, 1, 768)), "\r\n", "")
        else:
            text = value
    else:
        text = F.to_json(F.struct(*[F.col(f"`{f.name}`") for f in fields]))
    big = size > F.lit(cap)
    reason = F.concat(F.lit("record of "), size.cast("string"), F.lit(" " + OVER.format(cap=cap)))
    return shared.withColumns({ERR: F.when(big, reason).otherwise(F.col(ERR)),
                               PAYLOAD: F.when(big, F.substring(text, 1, 1024)).otherwise(F.col(PAYLOAD))})


def ok_frame(shared: Any) -> Any:
    return shared.where(f"`{ERR}` IS NULL").drop(ERR, PAYLOAD)


class SplitBuilt(Built):
    """A stage split into good rows (`out`) and dead letters (`dead`), each made when first read: a sink that
    splits the shared frame while writing it reads neither (each is a few py4j round trips and an analysis, per
    micro-batch)."""

    def __init__(self, pipeline: str = "", stage: str = "", **fields: Any):
        self._names = (pipeline, stage)
        self._halves: dict[str, Any] = {}
        super().__init__(**fields)

    def _half(self, which: str) -> Any:
        if self._halves.get(which) is None and self.shared is not None:
            self._halves[which] = ok_frame(self.shared) if which == "out" else dead_frame(self.shared, *self._names)
        return self._halves.get(which)

    def _set(self, which: str, frame: Any) -> None:
        self._halves[which] = frame

    out = property(lambda self: self._half("out"), lambda self, v: self._set("out", v))  # type: ignore[assignment]
    dead = property(lambda self: self._half("dead"), lambda self, v: self._set("dead", v))  # type: ignore[assignment]


def as_shared(df: Any) -> Any:
    """`df` as a stage's shared frame whose rows are all good so far (ERR and PAYLOAD NULL): a source that only
    fails rows on their event time (etl.compile.watermark's horizon) splits it with `from_shared` too."""
    from pyspark.sql import functions as F

    return df.withColumns({ERR: F.lit(None).cast("string"), PAYLOAD: F.lit(None).cast("string")})


def from_shared(shared: Any, pipeline: str, stage: str, on_error: str = "dead_letter") -> Built:
    """on_error: dead_letter (split), drop (good rows only), keep (every row, failed fields NULL)."""
    if on_error == "keep":
        return Built(out=shared.drop(ERR, PAYLOAD))
    if on_error == "drop":
        return Built(out=ok_frame(shared))
    return SplitBuilt(pipeline, stage, shared=shared)
