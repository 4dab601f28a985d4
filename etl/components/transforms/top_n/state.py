"""top_n with `continuous: true`: each key's first n rows in the state store, on transformWithState (etl.components.transforms.top_n.spec).

One value state per `partition_by` key holds the key's current first n rows, in rank order (each row
as a tuple of the input's columns, timestamps as epoch microseconds: etl.compile.windows.state). Per
micro-batch a key's rows join them; ranked by `order_by` (nulls below every value: first ascending,
last descending, as the per-window top_n orders them), the first n stay. Ties keep the rows already
ranked ahead of newcomers (Flink: the earlier row wins); newcomers of one batch tie-break by their
values, so a replayed micro-batch (started from the state checkpointed before it) yields the same
rows. Then, for each rank whose row changed, the new row goes out with its rank and `_update`: true
when it replaces the row that held the rank before (that row moved down, or out of the first n).
No timers, no watermark: the state holds n rows per key for as long as the pipeline runs.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any
from collections.abc import Iterator

from etl.compile.windows.state import ALL_KEY, from_state, state_type, to_state
from etl.spec.continuous import UPDATE
from etl.components.transforms.top_n.spec import order_terms

RANK = "_etl_rank"


def compare(terms: tuple[tuple[int, bool], ...]) -> Any:
    """A sort key over row tuples: by (column index, descending) terms, NULL below every value."""
    def cmp(a: tuple, b: tuple) -> int:
        for i, desc in terms:
            x, y = a[i], b[i]
            if x == y:
                continue
            c = -1 if x is None else 1 if y is None else (-1 if x < y else 1)
            return -c if desc else c
        return 0

    return functools.cmp_to_key(cmp)


def ranked(old: list[tuple], new: list[tuple], n: int, key: Any) -> list[tuple]:
    """The first n of a key's ranked rows `old` and its batch's rows `new` (see the module docstring)."""
    return sorted([*old, *sorted(new, key=repr)], key=key)[:n]


def changes(old: list[tuple], top: list[tuple]) -> Iterator[tuple[int, tuple, bool]]:
    """(rank, row, replaces a row) for each rank whose row changed from `old` to `top`."""
    for r, row in enumerate(top):
        if r >= len(old) or old[r] != row:
            yield r + 1, row, r < len(old)


def processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    state_schema = StructType([StructField("rows", BinaryType(), True)])

    class TopNProcessor(StatefulProcessor):
        def __init__(self, fields: tuple[str, ...], terms: tuple[tuple[int, bool], ...], n: int):
            self.fields, self.terms, self.n = fields, terms, n
            self.out_fields = (*fields, RANK, UPDATE)

        def init(self, handle: Any) -> None:
            self.value = handle.getValueState("top", state_schema)
            self.key = compare(self.terms)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            old = pickle.loads(self.value.get()[0]) if self.value.exists() else []
            top = ranked(old, [tuple(r[f] for f in self.fields) for r in rows], self.n, self.key)
            if top == old:
                return
            self.value.update((pickle.dumps(top, protocol=5),))
            for rank, row, update in changes(old, top):
                yield Row(**dict(zip(self.out_fields, (*row, rank, update), strict=True)))

        def close(self) -> None:
            pass

    return TopNProcessor


def continuous_top_n(df: Any, spec: Any) -> Any:
    """The changes of each key's first `spec.n` rows of streaming `df`, with the rank in `spec.rank` and `_update`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, IntegerType, StructField, StructType

    fields = [f for f in df.schema.fields if f.name != spec.rank]
    names = tuple(f.name for f in fields)
    inp = df.select(*[to_state(f.name, f.dataType).alias(f.name) for f in fields])
    keys = list(spec.partition_by)
    if not keys:  # one global ranking
        inp = inp.withColumn(ALL_KEY, F.lit(0))
        keys = [ALL_KEY]
    terms = tuple((names.index(c), desc) for c, desc in order_terms(spec.order_by))
    out_type = StructType([StructField(f.name, state_type(f.dataType), True) for f in fields]
                          + [StructField(RANK, IntegerType(), True), StructField(UPDATE, BooleanType(), True)])
    proc = processor_class()(names, terms, spec.n)
    out = inp.groupBy(*[F.col(f"`{k}`") for k in keys]).transformWithState(proc, out_type, "Append", "None")
    return out.select(*[from_state(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in fields],
                      F.col(RANK).alias(spec.rank), F.col(UPDATE))
