"""aggregate: a continuously updated aggregate per key (etl.spec.continuous), on transformWithState.

One value state per key holds the accumulators of the aggregates (the window state engine's,
etl.compile.windows.state) and nothing else: no timers, no watermark. Each call (the key's rows of
one micro-batch) adds them and yields one row with the key's new values, `_update` true when a
row went out for the key before. A replayed micro-batch starts from the state of the batch before
it (Spark's checkpoint), so it yields the same rows, which the sinks write idempotently.
Ordering aggregates (first, last, collect_list) order by event time when the input has one, else
by value.
"""

from __future__ import annotations

import pickle
from typing import Any, Iterator

from etl.compile.context import Built, CompileContext, CompileError
from etl.compile.transforms.columns import _expr
from etl.compile.windows.native import ET_COL, WindowError, agg_column
from etl.compile.windows.state import (ALL_KEY, MS_COL, VAL, Config, accumulator_inputs, add, from_state, new_acc,
                                       result, state_type, value_columns)
from etl.graph.model import Node
from etl.spec.continuous import RETRACT, UPDATE


def processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    state_schema = StructType([StructField("acc", BinaryType(), True)])

    class AggregateProcessor(StatefulProcessor):
        def __init__(self, cfg: Config, out_fields: tuple[str, ...], n_values: int):
            self.cfg, self.out_fields, self.n_values = cfg, out_fields, n_values

        def init(self, handle: Any) -> None:
            self.value = handle.getValueState("acc", state_schema)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            cfg = self.cfg
            before = self.value.exists()
            acc = pickle.loads(self.value.get()[0]) if before else new_acc(cfg)
            for r in rows:
                add(cfg, acc, r[MS_COL], tuple(r[VAL.format(i)] for i in range(self.n_values)))
            self.value.update((pickle.dumps(acc, protocol=5),))
            d = dict(zip(cfg.keys, key))
            d.update(zip(cfg.names, result(cfg, acc)))
            d[UPDATE] = before
            yield Row(**{f: d.get(f) for f in self.out_fields})

        def close(self) -> None:
            pass

    return AggregateProcessor


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, StructField, StructType

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
    cfg = Config("continuous", 0, 0, 0, None, False, tuple(aggs), keys, names)
    cols = groups or [F.lit(0).alias(ALL_KEY)]
    inp = df.select(*cols, ms.alias(MS_COL), *value_columns(fields, types))
    key_fields = [schema[g] for g in spec.group_by] or [inp.schema[ALL_KEY]]
    agg_fields = [schema[n] for n in names]
    out_type = StructType([StructField(f.name, f.dataType, True) for f in key_fields]
                          + [StructField(f.name, state_type(f.dataType), True) for f in agg_fields]
                          + [StructField(UPDATE, BooleanType(), True)])
    proc = processor_class()(cfg, tuple(out_type.names), len(fields))
    out = inp.groupBy(*[F.col(f"`{k}`") for k in keys]).transformWithState(proc, out_type, "Append", "None")
    out = out.select(*groups, *[from_state(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in agg_fields],
                     F.col(UPDATE))
    if spec.having:  # a key failing `having` after a row of it went out: retracted (the sink deletes it)
        having = F.coalesce(_expr(node, spec.having, "having"), F.lit(False))
        out = out.where(having | F.col(UPDATE)).withColumn(RETRACT, ~having)
    return Built(out=out)
