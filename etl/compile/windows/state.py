"""The state engine of windows: accumulators and the compile step of a transformWithState processor.

Used (see etl/compile/windows/native.py) when a window emits provisional results (`emit.early`),
updates closed windows with late events (`late: update`) or sends late events to the
dead-letter output. The processor itself, its state and its timers: etl/compile/windows/processor.py.
Timers are event-time timers, except for a continuous run with `emit.early`, which uses
processing-time timers (`timers="processing"`): Spark runs a ProcessingTime-mode processor's
query batch after batch, which an AvailableNow run (`--once`, `--drain`) could never finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from etl.compile.windows.native import (ERR, ET_COL, FINAL, PAYLOAD, RETRACT, WindowError, WindowResult, key_columns,
                                       output_schema)
from etl.spec.aggregates import AGGREGATES, STATE_FIELD_TYPES

MS_COL = "_etl_ms"
VAL = "_etl_v{}"
WS, WE, PREV, RETRACTED, EVENT_MS = "_etl_ws", "_etl_we", "_etl_prev", "_etl_rt", "_etl_ems"
UPDATE = "_update"
ALL_KEY = "_etl_all"
SIMPLE_TYPES = STATE_FIELD_TYPES


@dataclass(frozen=True)
class Config:
    kind: str
    size_ms: int
    slide_ms: int
    gap_ms: int
    early_ms: int | None
    dead_letter: bool  # late (too late, with `late: update`) events to the dead-letter output
    aggs: tuple[tuple[str, int | None, int | None], ...]  # (fn, value column index or None, n)
    keys: tuple[str, ...]  # grouping column names (output)
    names: tuple[str, ...]  # aggregate output names
    update: bool = False  # late: update
    lateness_ms: int = 0  # allowed_lateness
    every_ms: int | None = None  # at most one update row per key this often
    timers: str = "event"  # event | processing (etl/compile/windows/processor.py)
    python: tuple[tuple[str, Any], ...] = ()  # aggregate functions of the pipeline: (fn, etl.compile.functions.RowCall)
    offset_ms: int = 0  # window starts are offset + k * slide (a cumulating window's slide: its step)


class AggregateFailed(Exception):
    """A pipeline's aggregate function raised on a window's values: that window's row is a dead letter."""


class PythonAggregate:
    """A pipeline's aggregate function in the state engine: the window's values are its accumulator (kept in the
    state store with the window), the function runs on them as a pandas Series when the window's row is made,
    through etl.compile.functions.RowCall: bounded as a scalar function's call (time, memory, a crash of its worker,
    the value's declared type and size), each bound the window's dead letter naming the function."""

    def __init__(self, name: str, fn: Any):
        self.name, self.fn = name, fn

    @staticmethod
    def new() -> list:
        return []

    @staticmethod
    def add(acc: list, ms: int, v: Any, n: int | None) -> list:
        acc.append(v)
        return acc

    @staticmethod
    def merge(x: list, y: list, n: int | None) -> list:
        return x + y

    def result(self, acc: list) -> Any:
        import pandas as pd

        if not acc:
            return None
        value, error = self.fn(pd.Series(acc))
        if error is not None:  # it raised, ran past a bound, or returned a value no row can hold: a dead letter
            raise AggregateFailed(f"python function '{self.name}' failed: {error}")
        return value


def _agg(cfg: Config, fn: str) -> Any:
    entry = AGGREGATES.get(fn)
    if entry is not None:
        return entry
    return PythonAggregate(fn, dict(cfg.python)[fn])


# ------------------------------------------------------------- accumulators
def new_acc(cfg: Config) -> list:
    return [_agg(cfg, fn).new() for fn, _, _ in cfg.aggs]


def add(cfg: Config, acc: list, ms: int, values: tuple) -> None:
    for i, (fn, col, n) in enumerate(cfg.aggs):
        v = values[col] if col is not None else 1
        if v is not None:
            acc[i] = _agg(cfg, fn).add(acc[i], ms, v, n)


def merge(cfg: Config, a: list, b: list) -> list:
    """Accumulators of two merged sessions."""
    return [_agg(cfg, fn).merge(a[i], b[i], n) for i, (fn, _, n) in enumerate(cfg.aggs)]


def result(cfg: Config, acc: list) -> list:
    return [_agg(cfg, fn).result(acc[i]) for i, (fn, _, _) in enumerate(cfg.aggs)]


def windows_of(cfg: Config, ms: int) -> list[tuple[int, int]]:
    """The windows of an event at `ms`: starts at offset + k * slide (a cumulating window: one start per size,
    ends every step after it up to the size), as Flink's window assigners."""
    if cfg.kind == "session":
        return [(ms, ms + cfg.gap_ms)]
    if cfg.kind == "cumulating":
        start = ms - (ms - cfg.offset_ms) % cfg.size_ms
        first = ms - (ms - cfg.offset_ms) % cfg.slide_ms + cfg.slide_ms
        return [(start, end) for end in range(first, start + cfg.size_ms + 1, cfg.slide_ms)]
    last = ms - (ms - cfg.offset_ms) % cfg.slide_ms
    out = []
    start = last
    while start > ms - cfg.size_ms:
        out.append((start, start + cfg.size_ms))
        start -= cfg.slide_ms
    return out[::-1]


# --------------------------------------------------------------- compile
def state_type(dt: Any) -> Any:
    """Timestamps travel through the processor as epoch microseconds."""
    from pyspark.sql.types import ArrayType, LongType, TimestampType

    if isinstance(dt, TimestampType):
        return LongType()
    if isinstance(dt, ArrayType) and isinstance(dt.elementType, TimestampType):
        return ArrayType(LongType(), True)
    return dt


def to_state(name: str, dt: Any) -> Any:
    """Column `name` (of type `dt`) as a processor carries it: timestamps (and arrays of them) as epoch
    microseconds (state_type)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, TimestampType

    col = F.col(f"`{name}`")
    if isinstance(dt, TimestampType):
        return F.unix_micros(col)
    if isinstance(dt, ArrayType) and isinstance(dt.elementType, TimestampType):
        return F.transform(col, lambda x: F.unix_micros(x))
    return col


def from_state(col: Any, dt: Any) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, TimestampType

    if isinstance(dt, TimestampType):
        return F.timestamp_micros(col)
    if isinstance(dt, ArrayType) and isinstance(dt.elementType, TimestampType):
        return F.transform(col, lambda x: F.timestamp_micros(x))
    return col


def accumulator_inputs(types: dict[str, str], aggregates: Any, why: str) -> tuple[list[str], list[tuple]]:
    """(the value columns the processor reads, its Config.aggs) of `aggregates` over columns of `types`."""
    fields: list[str] = []
    aggs: list[tuple] = []
    for a in aggregates:
        if a.fn == "count" and (a.field is None or a.field == "*"):
            aggs.append((a.fn, None, None))
            continue
        name = a.field if a.field in types else \
            next((c for c in types if c.lower() == a.field.lower()), a.field)  # case-insensitive, as Spark
        t = types.get(name)
        if t is None or t not in SIMPLE_TYPES:
            raise WindowError(f"aggregate {a.fn} over '{a.field}' ({t or 'nested field'}): {why}, aggregate fields "
                              "must be top-level numbers, strings, booleans or timestamps", "aggregates", code="E404")
        if name not in fields:
            fields.append(name)
        aggs.append((a.fn, fields.index(name), a.n))
    return fields, aggs


def value_columns(fields: list[str], types: dict[str, str]) -> list[Any]:
    """The processor's input values `_etl_v<i>` (timestamps as epoch microseconds)."""
    from pyspark.sql import functions as F

    return [(F.unix_micros(F.col(f"`{f}`")) if types[f] == "timestamp" else F.col(f"`{f}`")).alias(VAL.format(i))
            for i, f in enumerate(fields)]


def state_aggregate(df: Any, spec: Any, et: str = ET_COL, *, stage: str, payload: Any = None,
                    source_columns: list[str] | None = None, guard_having: Any = None,
                    timers: str = "event", python: dict[str, Any] | None = None) -> WindowResult:
    """`df` carries the watermarked timestamp column `et`. See the module docstring.

    guard_having(frame, columns) -> (frame, value, reason, payload): `having` evaluated so that a row on which
    it throws is a dead letter (reason and payload NULL on the other rows); None: plain `having`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    early_ms = int(round(spec.emit.early * 1000)) if spec.emit.early is not None else None
    emit = spec.emit
    update = emit.late == "update"
    # a window whose Python aggregate function raises is a dead letter (etl.compile.windows.processor)
    dead_letter = emit.late == "dead_letter" or (update and emit.too_late == "dead_letter") or bool(python)
    types = dict(df.dtypes)
    fields, aggs = accumulator_inputs(types, spec.aggregates, "with early emission, late dead letters or Python aggregates")
    schema = output_schema(df, spec, et)
    keys = tuple(spec.group_by) or (ALL_KEY,)
    cfg = Config(spec.kind, _ms(spec.size), _ms(spec.slide or spec.step or spec.size), _ms(spec.gap), early_ms,
                 dead_letter, tuple(aggs), keys, tuple(a.as_ for a in spec.aggregates), update,
                 _ms(emit.allowed_lateness), _ms(emit.every) or None, timers if early_ms is not None else "event",
                 tuple(sorted((python or {}).items())), _ms(spec.offset))

    cols = [F.col(f"`{g}`") for g in spec.group_by] or [F.lit(0).alias(ALL_KEY)]
    cols.append(F.unix_millis(F.col(f"`{et}`")).alias(MS_COL))
    cols += value_columns(fields, types)
    if dead_letter:
        if payload is None:
            src = [c for c in (source_columns or df.columns) if c != ET_COL]
            payload = F.to_json(F.struct(*[F.col(f"`{c}`") for c in src]))
        cols.append(payload.cast("string").alias(PAYLOAD))
    inp = df.select(*cols)

    key_fields = [schema[g] for g in spec.group_by] or [inp.schema[ALL_KEY]]
    agg_fields = [schema[a.as_] for a in spec.aggregates]
    out_fields = [StructField(f.name, f.dataType, True) for f in key_fields]
    out_fields += [StructField(WS, LongType(), True), StructField(WE, LongType(), True)]
    out_fields += [StructField(f.name, state_type(f.dataType), True) for f in agg_fields]
    out_fields += [StructField(FINAL, BooleanType(), True), StructField(PREV, BooleanType(), True),
                   StructField(RETRACTED, BooleanType(), True), StructField(UPDATE, BooleanType(), True),
                   StructField(ERR, StringType(), True), StructField(PAYLOAD, StringType(), True),
                   StructField(EVENT_MS, LongType(), True)]
    out_type = StructType(out_fields)
    from etl.compile.windows.processor import processor_class

    proc = processor_class()(cfg, tuple(f.name for f in out_fields))
    mode = "ProcessingTime" if cfg.timers == "processing" else "EventTime"
    tagged = inp.groupBy(*[F.col(f"`{k}`") for k in keys]).transformWithState(proc, out_type, "Append", mode)

    names = [*spec.group_by, "window_start", "window_end", *[a.as_ for a in spec.aggregates]]
    conv = tagged.select(
        *[F.col(f"`{g}`") for g in spec.group_by],
        F.timestamp_millis(F.col(WS)).alias("window_start"), F.timestamp_millis(F.col(WE)).alias("window_end"),
        *[from_state(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in agg_fields],
        F.col(FINAL), F.col(PREV), F.col(RETRACTED), F.col(UPDATE), F.col(ERR), F.col(PAYLOAD), F.col(EVENT_MS))
    if spec.having and guard_having is not None:  # a window row on which `having` throws: a dead letter
        conv, value, reason, row = guard_having(conv, names)
        conv = conv.withColumn(ERR, F.coalesce(F.col(ERR), reason)).withColumn(PAYLOAD, F.coalesce(F.col(PAYLOAD), row))
        having = F.coalesce(value, F.lit(False))
        dead_letter = True
    else:
        having = F.coalesce(F.expr(spec.having), F.lit(False)) if spec.having else F.lit(True)
    is_result = F.col(ERR).isNull()
    extra: list[Any] = []
    if early_ms is None and not update:
        keep = having
    else:
        # a final (or update) row failing `having` still goes out, flagged _retract, when a row went before for
        # its window; so does the processor's retraction of a session whose bounds changed after a row
        keep = having | (F.col(FINAL) & F.col(PREV)) | F.col(RETRACTED)
        extra = [F.col(FINAL), (F.col(RETRACTED) | (F.col(FINAL) & ~having)).alias(RETRACT)]
        if update:
            extra.append(F.coalesce(F.col(UPDATE), F.lit(False)).alias(UPDATE))
    shared = conv.where(~is_result | keep) if dead_letter else conv.where(is_result & keep)
    shared = shared.select(*[F.col(f"`{n}`") for n in names], *extra, F.col(ERR), F.col(PAYLOAD))
    out = shared.where(F.col(ERR).isNull()).drop(ERR, PAYLOAD)
    late = None
    if dead_letter:
        late = conv.where(~is_result).select(
            F.lit(stage).alias("stage"), F.col(ERR).alias("reason"), F.col(PAYLOAD).alias("payload"),
            F.timestamp_millis(F.col(EVENT_MS)).alias("event_time"))
    return WindowResult(out, "append", key_columns(spec), "state", late=late,
                        shared=shared if dead_letter else None,
                        final_column=FINAL if (early_ms is not None or update) else None)


def _ms(d: Any) -> int:
    return int(round(float(d) * 1000)) if d is not None else 0
