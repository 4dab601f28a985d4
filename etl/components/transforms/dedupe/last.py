"""dedupe with `keep: last`: each key's newest row by event time, on transformWithState.

Per key the state holds the newest event time written (ms). Per micro-batch a key's rows are
read; a row not past the current watermark is late: dropped. The newest of the others (ties: the
later one read, as Flink's keep-last) goes out when it is at least as new as the state's, and
becomes the state. An event-time timer at the newest event time ends the key's state once the
watermark passes it: any row accepted later is past the watermark, so newer than every row
written before; the state stays bounded by the watermark, as keep-first's. Timestamps cross the processor as epoch microseconds.
A replayed micro-batch starts from the previous batch's state: the same rows go out.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterator

from etl.compile.windows.state import from_state, state_type, to_state

MS_COL = "_etl_ms"


def processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import LongType, StructField, StructType

    state_schema = StructType([StructField("ms", LongType(), True)])

    class KeepLastProcessor(StatefulProcessor):
        def __init__(self, out_fields: tuple[str, ...]):
            self.out_fields = out_fields

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.value = handle.getValueState("newest", state_schema)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            wm = timerValues.getCurrentWatermarkInMs()
            newest = self.value.get()[0] if self.value.exists() else None
            floor = max(newest, wm + 1) if newest is not None else wm + 1
            best = None
            for r in rows:
                ms = r[MS_COL]
                if ms is not None and ms >= floor and (best is None or ms >= best[MS_COL]):
                    best = r
            if best is None:
                return
            if newest is not None:
                self.handle.deleteTimer(newest)
            self.value.update((best[MS_COL],))
            self.handle.registerTimer(best[MS_COL])
            yield Row(**{f: best[f] for f in self.out_fields})

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            self.value.clear()
            return iter(())

        def close(self) -> None:
            pass

    return KeepLastProcessor


def keep_last(df: Any, keys: list[str], et: str) -> Any:
    """The newest row per `keys` by the watermarked timestamp column `et` of streaming `df` (static: per key)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    if not df.isStreaming:
        w = Window.partitionBy(*[F.col(f"`{k}`") for k in keys]).orderBy(F.col(f"`{et}`").desc())
        return df.withColumn(MS_COL, F.row_number().over(w)).where(F.col(MS_COL) == 1).drop(MS_COL)
    fields = df.schema.fields
    inp = df.select(*[to_state(f.name, f.dataType).alias(f.name) for f in fields],
                    F.unix_millis(F.col(f"`{et}`")).alias(MS_COL))
    out_type = StructType([StructField(f.name, state_type(f.dataType), True) for f in fields])
    proc = processor_class()(tuple(out_type.names))
    out = inp.groupBy(*[F.col(f"`{k}`") for k in keys]).transformWithState(proc, out_type, "Append", "EventTime")
    return out.select(*[from_state(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in fields])

