"""The state engine of windows: the accumulators of a transformWithState processor.

Used (see etl/compile/windows/native.py; its compile step: etl/compile/windows/aggregate.py) when a
window emits provisional results (`emit.early`), updates closed windows with late events (`late: update`)
or sends late events to the dead-letter output. The processor itself, its state and its timers:
etl/compile/windows/processor.py. Timers are event-time timers, except for a continuous run with `emit.early`, which uses
processing-time timers (`timers="processing"`): Spark runs a ProcessingTime-mode processor's
query batch after batch, which an AvailableNow run (`--once`, `--drain`) could never finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from etl.compile.windows.native import WindowError
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
