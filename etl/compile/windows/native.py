"""Windowed aggregation: tumbling, sliding and session windows over event or processing time.

`window_aggregate(df, spec, event_time)` (etl.compile.windows.aggregate) returns a `WindowResult`. Two engines
compute it, both on the RocksDB state store:

* **native** -- Spark's streaming aggregation (`window` / `session_window`,
  watermark, append mode). Used when results are emitted once per window and
  late events are dropped. Every aggregate is exact except
  `approx_count_distinct` (HyperLogLog++): `count_distinct` is
  `size(collect_set(x))`, which Spark accepts in streaming aggregations and
  keeps exact (the set of distinct values of a window and key lives in state
  until the window closes).
* **state** -- a `transformWithStateInPandas` processor
  (`etl.compile.windows.state`), used for early (provisional) results and for
  late events sent to the dead-letter output, which Spark's aggregation cannot do.

Output columns: the group_by columns, window_start, window_end (timestamps; a
session ends at its last event + gap), one column per aggregate in the order
written. With `emit.early` two more columns say how sinks must read rows:

* `_final` (boolean): false for a provisional row that replaces the previous
  row of the same (group_by..., window_start, window_end) -- the upsert key,
  `WindowResult.key_columns`; true for the one final row of that key.
  Provisional rows of a key go out when it receives events, at most once per
  `early` of processing time; changes held back by that limit go out once the
  watermark has moved `early` further, or with the final row.
* `_retract` (boolean): with `having`, a final row whose group no longer
  satisfies the condition while a provisional row was emitted earlier: the
  sink deletes that key (append-only sinks see a row flagged for deletion).

Aggregate meanings (identical in both engines and in tests/windows/oracle.py):
count (rows, or non-null values of `field`), sum/avg/min/max ignore nulls
(NULL when there is none), count_distinct (exact), approx_count_distinct
(native: HLL++, rsd 5%; state engine: exact), collect_list (non-null values
ordered by event time then value), collect_set (distinct non-null values,
ascending), first/last (the non-null value of the earliest/latest event; ties
broken by the smaller/larger value), top_n (the n largest non-null values,
descending, repeats kept; empty array when there is none).

Watermark and lateness. The watermark during micro-batch N is W(N) = max
event time seen in batches before N minus the allowed lateness (Spark's rule:
it moves between batches). A window is final once W(N) >= its end. An event is
late for a window when the window has already closed:
* native engine: window end <= W(N-1) (Spark filters late rows with the
  previous batch's watermark, so an event that arrives in the batch that closes
  its window is still counted; kept on purpose: Spark's watermark is the max
  over partitions, not Flink's per-partition min, see etl.physical.lateness);
* state engine: window end <= W(N) (the processor sees only the current
  watermark); an event late for any of its (sliding) windows goes to the
  dead-letter output once, with the reason.
Both are deterministic for a given batch composition, which the checkpoint
replays identically after a restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from etl.compile.drain import watermarked
from etl.dead_letters import ERR, PAYLOAD  # noqa: F401  (the shared frame's columns; compile splits on them)
from etl.spec.aggregates import AGGREGATES, state_engine_why

ET_COL = "_etl_et"  # internal event-time column (timestamp, watermarked)
WIN_COL = "_etl_window"
FINAL = "_final"
RETRACT = "_retract"
NUMERIC_TYPES = ("tinyint", "smallint", "int", "bigint")
WATERMARK_META = "spark.watermarkDelayMs"


class WindowError(ValueError):
    """A window that cannot be compiled (unknown column, unsupported combination)."""

    def __init__(self, message: str, field: str | None = None, code: str | None = None):
        super().__init__(message)
        self.field = field
        self.code = code


@dataclass
class WindowResult:
    df: Any  # the results (without ERR/PAYLOAD)
    output_mode: str = "append"
    key_columns: tuple[str, ...] = ()  # upsert key of a (window, group)
    engine: str = "native"
    late: Any = None  # dead-letter rows: event_time, reason, payload (state engine with late=dead_letter)
    shared: Any = None  # results and late rows in one frame, told apart by ERR (NULL for results)
    final_column: str | None = None  # "_final" when provisional rows are emitted
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- event time
def event_time_column(df: Any, field_name: str | None, watermark_s: float | None, *,
                      processing: bool = False, name: str = ET_COL) -> tuple[Any, str]:
    """(`df` with a watermarked timestamp column holding event time or processing time, that column's name).

    The field may be a timestamp, epoch milliseconds (integer) or ISO text: it is
    converted into a new column `name`. When the field already is a watermarked
    timestamp (its source declared it), the field itself is the answer: a copy
    would be a second event-time column, which Spark rejects in joins.
    """
    from pyspark.sql import functions as F

    if processing:
        out = df.withColumn(name, F.current_timestamp())
        return (watermarked(out, name, "0 seconds") if df.isStreaming else out), name
    if field_name is None:
        raise WindowError("event time is needed: set `event_time: {field: ts, watermark: 30s}` "
                          "on the window or its source, or use `time: processing`", "event_time")
    types = dict(df.dtypes)
    if field_name not in types:
        raise WindowError(f"event time column '{field_name}' does not exist; columns: {', '.join(df.columns)}",
                          "event_time")
    t = types[field_name]
    src = F.col(f"`{field_name}`")
    if t in ("timestamp", "timestamp_ntz"):
        col = src.cast("timestamp") if t == "timestamp_ntz" else src
        already = WATERMARK_META in df.schema[field_name].metadata
    elif t in NUMERIC_TYPES:
        col, already = F.timestamp_millis(src.cast("bigint")), False
    elif t == "string":
        col, already = F.to_timestamp(src), False
    else:
        raise WindowError(f"event time column '{field_name}' is {t}, not a timestamp or epoch milliseconds",
                          "event_time")
    if already:
        return df, field_name
    out = df.withColumn(name, col)
    if df.isStreaming:
        if watermark_s is None:
            raise WindowError("event time needs a watermark (allowed lateness)", "event_time")
        out = watermarked(out, name, _interval(watermark_s))
    return out, name


def _interval(seconds: float) -> str:
    ms = int(round(seconds * 1000))
    return f"{ms // 1000} seconds" if ms % 1000 == 0 else f"{ms} milliseconds"


# ----------------------------------------------------------------- aggregates
def agg_column(a: Any, df: Any, et: str = ET_COL) -> Any:
    """The Spark aggregate expression for spec aggregate `a` (named `a.as_`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    entry = AGGREGATES.get(a.fn)
    if entry is None:  # a pipeline's aggregate function (a pandas UDF on the session: etl.compile.functions)
        return F.call_function(a.fn, _field(df, a.field)).alias(a.as_)
    if not entry.needs_field and (a.field is None or a.field == "*"):  # count(*)
        return entry.spark(F, F.lit(1), None, a.n, None).alias(a.as_)
    v = _field(df, a.field)
    order = F.when(v.isNotNull(), F.struct(F.col(f"`{et}`").alias("t"), v.alias("v")))  # event time, then value
    c = entry.spark(F, v, order, a.n, lambda: ArrayType(_field_type(df, a.field)))
    return c.alias(a.as_)


def _field(df: Any, name: str) -> Any:
    from pyspark.sql import functions as F

    if name in df.columns:
        return F.col(f"`{name}`")
    root = name.split(".", 1)[0]
    if root in df.columns:  # nested field a.b
        return F.col(name)
    raise WindowError(f"aggregate field '{name}' does not exist; columns: {', '.join(df.columns)}", "aggregates")


def _field_type(df: Any, name: str) -> Any:
    return df.select(_field(df, name).alias("x")).schema["x"].dataType


# --------------------------------------------------------------------- engine
def choose_engine(spec: Any) -> str:
    """native unless the window emits provisional rows, updates closed windows, sends late events to dead letters
    or calls a Python aggregate function (Spark's streaming aggregation cannot run pandas aggregate UDFs)."""
    return "state" if state_engine_why(spec) is not None else "native"


def choose_timers(spec: Any, trigger: str | None) -> str:
    """The state engine's timers: processing-time ones (`emit.timers: processing`) only in a continuous run (a
    ProcessingTime-mode processor runs batch after batch, so an AvailableNow run would never end); trigger:
    continuous | available_now | None (tests: event timers). Raises WindowError for an AvailableNow run."""
    if spec.emit.timers != "processing" or trigger is None:
        return "event"
    if trigger == "available_now":
        raise WindowError("`emit.timers: processing` needs a continuous run: --once, --drain and "
                          "`trigger: {mode: available_now}` would never end", "emit")
    return "processing"


def key_columns(spec: Any) -> tuple[str, ...]:
    return (*spec.group_by, "window_start", "window_end")


def window_column(spec: Any, et: str = ET_COL) -> Any:
    """Spark's window of each row. A cumulating window (size S, step T, offset O) is the sliding window of size S
    and slide T starting at s, read as [c, s + S) where c = s + pmod(O - s, S) is the start of the cumulation it
    ends (Flink's CUMULATE); a row before c is not in it (cumulating_rows drops that pair)."""
    from pyspark.sql import functions as F

    if spec.kind == "session":
        return F.session_window(F.col(f"`{et}`"), _interval(spec.gap))
    slide = {"sliding": spec.slide, "cumulating": spec.step}.get(spec.kind)
    every = (slide or spec.size).millis
    start = _interval((spec.offset.millis % every) / 1000) if spec.offset and spec.offset.millis % every else None
    return F.window(F.col(f"`{et}`"), _interval(spec.size), _interval(slide) if slide else None, start)


def cumulation_start(spec: Any, start: Any) -> Any:
    """The start (epoch ms) of the cumulation whose window is the sliding window starting at `start` (a column)."""
    from pyspark.sql import functions as F

    s = F.unix_millis(start)
    return s + F.pmod(F.lit(spec.offset.millis if spec.offset else 0) - s, F.lit(spec.size.millis))


def output_schema(df: Any, spec: Any, et: str = ET_COL) -> Any:
    """The StructType of group_by, window_start, window_end and the aggregates (as the native engine types them)."""
    from pyspark.sql import functions as F

    groups = [F.col(f"`{g}`") for g in spec.group_by]
    probe = df.groupBy(window_column(spec, et).alias(WIN_COL), *groups).agg(
        *[agg_column(a, df, et) for a in spec.aggregates])
    probe = probe.select(*groups, F.col(f"{WIN_COL}.start").alias("window_start"),
                         F.col(f"{WIN_COL}.end").alias("window_end"), *[F.col(f"`{a.as_}`") for a in spec.aggregates])
    return probe.schema
