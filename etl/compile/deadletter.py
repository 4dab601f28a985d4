"""Rows that fail parsing or conversion: split a stage's output into good rows and dead letters.

A stage that can fail builds one frame holding every row plus ERR (the reason,
NULL for good rows) and PAYLOAD (the original text); `from_shared` splits it.
Dead letters carry the pipeline, the stage id, the reason, the payload and the
processing time.
"""

from __future__ import annotations

from typing import Any

from etl.compile.context import ERR, PAYLOAD, Built
from etl.secrets import java_replacements


def fence(expr: Any) -> Any:
    """`expr`, made opaque to the optimizer at the cost of one integer comparison.

    A stage's good rows are `where(ERR IS NULL)` over a projection computing an expensive
    value (a regex, a JSON parse). Spark pushes such filters below projections by copying the
    aliased expressions into the filter, which would run the regex twice per row; it also
    merges projections. Neither happens across a nondeterministic expression, and
    spark_partition_id() is the cheapest one."""
    from pyspark.sql import functions as F

    return F.when(F.spark_partition_id() >= 0, expr)


# (SQL text rather than Column calls: each Column call is py4j round trips, and these run per micro-batch)
def dead_frame(shared: Any, pipeline: str, stage: str, carried_from: str | None = None) -> Any:
    """The dead letters of a stage's shared frame; `carried_from`: the source whose failed rows it carries
    (`carrying`), their stage."""
    from etl.optimize.native_split import sql_string

    stage_sql, reason_sql = sql_string(stage), f"`{ERR}`"
    if carried_from is not None:
        mark = f"startswith(`{ERR}`, {CARRIED_SQL})"
        stage_sql = f"CASE WHEN {mark} THEN {sql_string(carried_from)} ELSE {stage_sql} END"
        reason_sql = f"CASE WHEN {mark} THEN substr(`{ERR}`, {len(CARRIED) + 1}) ELSE `{ERR}` END"
    return shared.where(f"`{ERR}` IS NOT NULL").selectExpr(
        f"{sql_string(pipeline)} AS pipeline", f"{stage_sql} AS stage", f"{reason_sql} AS reason",
        f"CAST(`{PAYLOAD}` AS STRING) AS payload", "current_timestamp() AS time")


# A source's failed rows carried through its first stage (a transform that CARRIES_FAILED_ROWS, etl.spec.base) to
# that stage's split: the stage reads the source's micro-batch once, nothing is persisted for the source's own dead
# letters. The stage sees such a row with every column NULL; its reason, marked with CARRIED, and its payload ride
# in two columns the stage keeps as it keeps any input column, and replace the stage's own at its output.
CARRIED = "\u0000"  # a reason etl writes never starts with it
CARRIED_SQL = "chr(0)"
CARRIED_ERR = "_etl_carried_err"
CARRIED_PAYLOAD = "_etl_carried_payload"


def carrying(shared: Any) -> Any:
    """A source's shared frame as its first stage's input: the good rows' columns, NULL on a failed row, and the
    failed rows' marked reason and payload (CARRIED_ERR, CARRIED_PAYLOAD)."""
    data = [c.replace("`", "``") for c in shared.columns if c not in (ERR, PAYLOAD)]
    return shared.selectExpr(*[f"CASE WHEN `{ERR}` IS NULL THEN `{c}` END AS `{c}`" for c in data],
                             f"concat({CARRIED_SQL}, `{ERR}`) AS `{CARRIED_ERR}`",
                             f"CASE WHEN `{ERR}` IS NOT NULL THEN `{PAYLOAD}` END AS `{CARRIED_PAYLOAD}`")


def carried(shared: Any) -> Any | None:
    """The first stage's shared frame with the source's failed rows its dead letters (their reason first), or None
    when the stage did not keep CARRIED_ERR and CARRIED_PAYLOAD."""
    columns = shared.columns
    if CARRIED_ERR not in columns or CARRIED_PAYLOAD not in columns:
        return None
    data = [c.replace("`", "``") for c in columns if c not in (ERR, PAYLOAD, CARRIED_ERR, CARRIED_PAYLOAD)]
    return shared.selectExpr(*[f"`{c}`" for c in data], f"coalesce(`{CARRIED_ERR}`, `{ERR}`) AS `{ERR}`",
                             f"CASE WHEN `{CARRIED_ERR}` IS NOT NULL THEN `{CARRIED_PAYLOAD}` ELSE `{PAYLOAD}` END "
                             f"AS `{PAYLOAD}`")


def carried_stages(table: Any, stage: str, carried_from: str | None) -> list[tuple[str, Any]]:
    """A split write's failed rows (a pyarrow table of ERR, PAYLOAD) by stage: those `stage` carried from
    `carried_from` (their reason unmarked), then its own."""
    if carried_from is None:
        return [(stage, table)]
    import pyarrow as pa
    import pyarrow.compute as pc

    mark = pc.fill_null(pc.starts_with(table.column(ERR), CARRIED), False)
    theirs = table.filter(mark)
    theirs = theirs.set_column(theirs.schema.get_field_index(ERR), ERR, pc.utf8_slice_codeunits(theirs.column(ERR), len(CARRIED)).cast(pa.string()))
    return [(s, t) for s, t in ((carried_from, theirs), (stage, table.filter(pc.invert(mark)))) if t.num_rows]


def redacted_reasons(frame: Any) -> Any:
    """The dead-letter frame with values read from the environment (and URL passwords) hidden in its reasons,
    by the patterns of etl.secrets.redact run in the JVM: a reason is Spark's message about the row, built on
    an executor (a cast error quotes the expression's literal). The one place every dead letter passes before its
    sink (etl.runtime.runner)."""
    if frame is None:
        return frame
    from pyspark.sql import functions as F

    reason = F.col("reason")
    for pattern, replacement in java_replacements():
        reason = F.regexp_replace(reason, F.lit(pattern), F.lit(replacement))
    return frame.withColumn("reason", reason)


OVER = "bytes is over the maximum record size of {cap} bytes (ETL_MAX_RECORD_MB); payload: its first 1024 characters"


def within_record_size(shared: Any, cap: int, columns: list[str] | None = None,
                       failed: list[tuple[Any, str]] | None = None) -> Any:
    """`shared` (a stage's frame with ERR and PAYLOAD) with each row over `cap` bytes failed: its reason `record of N
    bytes is over the maximum record size of M bytes (ETL_MAX_RECORD_MB); payload: its first 1024 characters` and
    its payload those characters of its record (a single value: the value, in base64 when binary; else the values
    as JSON). The record: `columns` (a message's value), else the whole row; its size is its string and binary
    values' bytes and its malformed text's (PAYLOAD: a reader's corrupt record) together. The
    record-size guard of every source whose reader does not bound lines itself (etl/jvm/BoundedLines.java): csv and
    parquet files, Spark's text and json readers, kafka and rocketmq values (etl.connectors.messages).

    `failed`: the stage's own reasons for a row within the cap, (condition, reason) in order, in place of its ERR
    (a source passes its reader's malformed rows'), so that the good rows' filter (`ERR IS NULL`) is `size <= cap
    AND NOT condition ...` (see _reasons) and the reader still takes its `IsNull(corrupt record)` part, as without
    the guard. A CASE over ERR kept the whole CASE in that filter, evaluated per row: 6 to 9 % of a bare json
    read's CPU (bench/json_read.py --size-guard)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    fields = [f for f in shared.schema.fields if f.name not in (ERR, PAYLOAD) and (columns is None or f.name in columns)]
    measured = [f for f in fields if isinstance(f.dataType, (StringType, BinaryType))]
    if not measured and failed is None:  # (with `failed`, PAYLOAD holds the malformed records: measured)
        return shared
    # one SQL sum: with Column calls coalesce and greatest it cost 10 % more
    names = [f.name.replace("`", "``") for f in measured] + [PAYLOAD]
    size = F.expr(" + ".join(f"nvl(octet_length(`{c}`), 0L)" for c in names))  # (bigint: 2 GB values add up)
    if len(fields) == 1 and measured:
        value = F.col(f"`{fields[0].name}`")
        if isinstance(fields[0].dataType, BinaryType):  # its first 768 bytes: 1,024 characters of base64 (unchunked)
            text = F.translate(F.base64(F.substring(value, 1, 768)), "\r\n", "")
        else:
            text = value
    else:
        text = F.to_json(F.struct(*[F.col(f"`{f.name}`") for f in fields]))
    text = F.coalesce(F.col(PAYLOAD), text)  # a malformed record's text, else its values
    big = size > F.lit(cap)
    reason = F.concat(F.lit("record of "), size.cast("string"), F.lit(" " + OVER.format(cap=cap)))
    return shared.withColumns({ERR: _reasons(F, big, reason, failed),
                               PAYLOAD: F.when(big, F.substring(text, 1, 1024)).otherwise(F.col(PAYLOAD))})


def _reasons(F: Any, big: Any, reason: Any, failed: list[tuple[Any, str]] | None) -> Any:
    """ERR: `reason` when `big`, else the stage's own `failed` reasons (condition, literal) in order, or else ERR.
    With `failed`: `CASE WHEN big OR c1 OR ... THEN <those reasons' CASE, the last one its ELSE> END`, which Spark's
    optimizer makes `NOT big AND NOT c1 ...` in the good rows' filter (IsNull pushed into the branches, a CASE of
    one value folded, De Morgan), an IsNull conjunct of which a reader takes (its PushedFilters)."""
    if not failed:
        return F.when(big, reason).otherwise(F.col(ERR))
    (any_failed, err) = failed[-1][0], F.lit(failed[-1][1])
    for cond, why in [(big, reason), *[(c, F.lit(w)) for c, w in failed[:-1]]][::-1]:
        err, any_failed = F.when(cond, why).otherwise(err), cond | any_failed
    return F.when(any_failed, err)


def ok_frame(shared: Any) -> Any:
    from pyspark.sql import DataFrame

    # (3 round trips: pyspark's drop of several names makes a Java list of them, element by element)
    return DataFrame(shared._jdf.where(f"`{ERR}` IS NULL").drop(ERR).drop(PAYLOAD), shared.sparkSession)


class SplitBuilt(Built):
    """A stage split into good rows (`out`) and dead letters (`dead`), each made when first read: a sink that
    splits the shared frame while writing it reads neither (each is a few py4j round trips and an analysis, per
    micro-batch)."""

    def __init__(self, pipeline: str = "", stage: str = "", carried_from: str | None = None, **fields: Any):
        self._names = (pipeline, stage, carried_from)
        self._halves: dict[str, Any] = {}
        super().__init__(**fields)

    def _half(self, which: str) -> Any:
        if self._halves.get(which) is None and self.shared is not None:
            self._halves[which] = ok_frame(self.shared) if which == "out" else dead_frame(self.shared, *self._names)
        return self._halves.get(which)

    def _set(self, which: str, frame: Any) -> None:
        self._halves[which] = frame

    @property
    def has_dead(self) -> bool:
        return self._halves.get("dead") is not None or self.shared is not None

    @property
    def derived(self) -> bool:
        """Was a half made (or set) already?"""
        return any(v is not None for v in self._halves.values())

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
