"""aggregate: a continuously updated aggregate per key (etl.spec.continuous), on transformWithState.

One value state per key holds the accumulators of the aggregates (the window state engine's,
etl.compile.windows.state) and nothing else: no timers, no watermark. Each call (the key's rows of
one micro-batch) adds them and yields one row with the key's new values, `_update` true when a
row went out for the key before. A replayed micro-batch starts from the state of the batch before
it (Spark's checkpoint), so it yields the same rows, which the sinks write idempotently.
Ordering aggregates (first, last, collect_list) order by event time when the input has one, else
by value.

A pipeline's Python aggregate function keeps the key's values in the accumulator (the window state
engine's PythonAggregate) and runs on all of them after each micro-batch that changed the key. When
it raises, the key's row of that micro-batch is a dead letter (reason: the error; payload: the key
and the batch's values) and the key's state stays as it was before the batch: the rows that made it
fail are left out, later batches of the key go on from its last good values.
"""

from __future__ import annotations

import json
import pickle
from typing import Any
from collections.abc import Iterator

from etl.compile.context import ERR, PAYLOAD, Built, CompileContext, CompileError
from etl.compile.deadletter import from_shared
from etl.compile.functions import aggregate_functions
from etl.compile.columns import sql_expr
from etl.compile.windows.native import ET_COL, WindowError, agg_column
from etl.compile.windows.state import (ALL_KEY, MS_COL, VAL, AggregateFailed, Config, accumulator_inputs, add,
                                       from_state, new_acc, result, state_type, value_columns)
from etl.graph.model import Node
from etl.spec.continuous import RETRACT, UPDATE


def processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    state_schema = StructType([StructField("acc", BinaryType(), True)])

    class AggregateProcessor(StatefulProcessor):
        def __init__(self, cfg: Config, out_fields: tuple[str, ...], fields: tuple[str, ...]):
            self.cfg, self.out_fields, self.fields = cfg, out_fields, fields

        def init(self, handle: Any) -> None:
            self.value = handle.getValueState("acc", state_schema)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            cfg = self.cfg
            before = self.value.exists()
            acc = pickle.loads(self.value.get()[0]) if before else new_acc(cfg)
            batch = []
            for r in rows:
                values = tuple(r[VAL.format(i)] for i in range(len(self.fields)))
                add(cfg, acc, r[MS_COL], values)
                if cfg.python:
                    batch.append(values)
            d = dict(zip(cfg.keys, key, strict=True))
            try:
                d.update(zip(cfg.names, result(cfg, acc), strict=True))
            except AggregateFailed as e:  # a dead letter; the state keeps the key's values before this batch
                payload = {k: v for k, v in d.items() if k != ALL_KEY}
                payload.update({f: [v[i] for v in batch] for i, f in enumerate(self.fields)})
                yield Row(**{f: None for f in self.out_fields} | {
                    ERR: f"{e} (the key's {len(batch)} row(s) of this micro-batch are left out of its state)",
                    PAYLOAD: json.dumps(payload, default=str)})
                return
            self.value.update((pickle.dumps(acc, protocol=5),))
            d[UPDATE] = before
            yield Row(**{f: d.get(f) for f in self.out_fields})

        def close(self) -> None:
            pass

    return AggregateProcessor


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, StringType, StructField, StructType

    spec = node.spec
    df = inputs[0]
    missing = [g for g in spec.group_by if g not in df.columns]
    if missing:
        raise CompileError(f"aggregate '{node.id}': unknown group_by column(s) {', '.join(missing)}", node,
                           "group_by", f"columns: {', '.join(df.columns)}", code="E310")
    types = dict(df.dtypes)
    try:
        fields, aggs = accumulator_inputs(types, spec.aggregates, "in a continuous aggregate")
    except WindowError as e:
        raise CompileError(f"aggregate '{node.id}': {e}", node, "aggregates", code=e.code or "E400") from None
    et = ctx.event_time(node)
    order = F.col(f"`{et.field}`") if et is not None and types.get(et.field) == "timestamp" else None
    ms = F.unix_millis(order) if order is not None else F.lit(0).cast("bigint")
    probe_df = df.withColumn(ET_COL, order if order is not None else F.lit(0).cast("timestamp"))
    groups = [F.col(f"`{g}`") for g in spec.group_by]
    schema = probe_df.groupBy(*groups).agg(*[agg_column(a, probe_df, ET_COL) for a in spec.aggregates]).schema
    keys = tuple(spec.group_by) or (ALL_KEY,)
    names = tuple(a.as_ for a in spec.aggregates)
    python = aggregate_functions(ctx.graph, spec.aggregates)
    cfg = Config("continuous", 0, 0, 0, None, False, tuple(aggs), keys, names, python=tuple(sorted(python.items())))
    cols = groups or [F.lit(0).alias(ALL_KEY)]
    inp = df.select(*cols, ms.alias(MS_COL), *value_columns(fields, types))
    key_fields = [schema[g] for g in spec.group_by] or [inp.schema[ALL_KEY]]
    agg_fields = [schema[n] for n in names]
    out_type = StructType([StructField(f.name, f.dataType, True) for f in key_fields]
                          + [StructField(f.name, state_type(f.dataType), True) for f in agg_fields]
                          + [StructField(UPDATE, BooleanType(), True), StructField(ERR, StringType(), True),
                             StructField(PAYLOAD, StringType(), True)])
    proc = processor_class()(cfg, tuple(out_type.names), tuple(fields))
    out = inp.groupBy(*[F.col(f"`{k}`") for k in keys]).transformWithState(proc, out_type, "Append", "None")
    out = out.select(*groups, *[from_state(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in agg_fields],
                     F.col(UPDATE), F.col(ERR), F.col(PAYLOAD))
    if spec.having:  # a key failing `having` after a row of it went out: retracted (the sink deletes it)
        having = F.coalesce(sql_expr(node, spec.having, "having"), F.lit(False))
        out = out.where(having | F.col(UPDATE) | F.col(ERR).isNotNull()).withColumn(RETRACT, ~having)
        out = out.select(*[c for c in out.columns if c not in (ERR, PAYLOAD)], ERR, PAYLOAD)
    if not python:  # no function that can raise: no dead letters
        return Built(out=out.drop(ERR, PAYLOAD))
    return from_shared(out, ctx.pipeline, node.id)
