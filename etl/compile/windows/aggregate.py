"""A window's aggregate, by the engine the physical planner picked: `native` (Spark's streaming aggregation,
etl.compile.windows.native) or `state` (transformWithState: the accumulators of etl.compile.windows.state in the
processor of etl.compile.windows.processor).

Its own module, above the three, so that none of them imports another back.
"""

from __future__ import annotations

from typing import Any

from etl.compile.windows.native import (ERR, ET_COL, FINAL, PAYLOAD, RETRACT, WIN_COL, WindowError, WindowResult,
                                       agg_column, choose_engine, cumulation_start, event_time_column, key_columns,
                                       output_schema, window_column)
from etl.compile.windows.processor import processor_class
from etl.compile.windows.state import (ALL_KEY, EVENT_MS, MS_COL, PREV, RETRACTED, UPDATE, WE, WS, Config,
                                      accumulator_inputs, from_state, state_type, value_columns)


def window_aggregate(df: Any, spec: Any, event_time: Any = None, *, stage: str | None = None,
                     engine: str = "auto", payload: Any = None, guard_having: Any = None,
                     timers: str = "event", python: dict[str, Any] | None = None) -> WindowResult:
    """Aggregate streaming (or static) `df` by `spec` (a WindowTransform).

    event_time: the EventTime to use (the window's own, else its source's);
    ignored for `time: processing`. engine: auto | native | state. timers: event | processing (the state
    engine's timers for `emit.early`; processing only for a continuous run, see windows.state).
    payload: for late events sent to dead letters, the column holding the
    original record (default: the whole input row as JSON). guard_having: see
    state_aggregate (the native engine's `having` is guarded by its caller).
    """
    for g in spec.group_by:
        if g not in df.columns:
            raise WindowError(f"group_by column '{g}' does not exist; columns: {', '.join(df.columns)}", "group_by")
    if engine == "auto":
        engine = choose_engine(spec)
    if engine == "native" and choose_engine(spec) == "state":
        raise WindowError("early emission, late updates and late events to dead letters need the state engine",
                          "emit")
    processing = spec.time == "processing"
    et = event_time
    prepared, et_col = event_time_column(df, getattr(et, "field", None), getattr(et, "watermark", None),
                                         processing=processing)
    if engine == "native":
        return _native(prepared, spec, et_col)
    return state_aggregate(prepared, spec, et_col, stage=stage or spec.id, payload=payload,
                           source_columns=df.columns, guard_having=guard_having, timers=timers, python=python)


def _native(df: Any, spec: Any, et: str) -> WindowResult:
    from pyspark.sql import functions as F

    groups = [F.col(f"`{g}`") for g in spec.group_by]
    aggs = [agg_column(a, df, et) for a in spec.aggregates]
    start = F.col(f"{WIN_COL}.start")
    if spec.kind == "cumulating":  # each row's windows, then only those of its own cumulation
        df = df.withColumn(WIN_COL, window_column(spec, et))
        df = df.where(F.unix_millis(F.col(f"`{et}`")) >= cumulation_start(spec, start))
        out = df.groupBy(F.col(WIN_COL), *groups).agg(*aggs)
        start = F.timestamp_millis(cumulation_start(spec, start))
    else:
        out = df.groupBy(window_column(spec, et).alias(WIN_COL), *groups).agg(*aggs)
    out = out.select(*groups, start.alias("window_start"),
                     F.col(f"{WIN_COL}.end").alias("window_end"), *[F.col(f"`{a.as_}`") for a in spec.aggregates])
    if spec.having:
        out = out.where(F.coalesce(F.expr(spec.having), F.lit(False)))
    return WindowResult(out, "append", key_columns(spec), "native")


def state_aggregate(df: Any, spec: Any, et: str = ET_COL, *, stage: str, payload: Any = None,
                    source_columns: list[str] | None = None, guard_having: Any = None,
                    timers: str = "event", python: dict[str, Any] | None = None) -> WindowResult:
    """The state engine: `df` carries the watermarked timestamp column `et`. See etl.compile.windows.state.

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
