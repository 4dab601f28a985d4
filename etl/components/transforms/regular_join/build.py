"""regular_join: Flink's regular (unbounded) inner join on transformWithState (semantics: etl.components.transforms.regular_join.spec).

As the temporal join (etl.components.transforms.temporal_join.build), both inputs are unioned into one stream keyed by the
join's keys, each row tagged with its side, its own columns and the micro-batch's processing time
(current_timestamp() in a stream: the batch's time, recorded in its offset log, so a replayed micro-batch reads the
same time and the previous batch's state and the same rows go out). One value state per key holds {"l": [[stored
ms, left values]], "r": [...]}. Per micro-batch a key's rows are read in turn: the rows the TTL expired leave first;
a row joins every row the other side has kept (a pair out), then is kept itself; a row of a NULL key joins nothing
and is not kept. The time mode is None, not ProcessingTime: Spark runs a micro-batch after every one in that mode
(TransformWithStateExec.shouldRunAnotherBatch), so a stream would never be idle (nor an AvailableNow run end) and
timers and Spark's state TTL are not available: the expired rows of a key leave its state when the key gets its
next row (its pairs are Flink's either way; the state of a key that gets no row again stays).
"""

from __future__ import annotations

import pickle
from typing import Any
from collections.abc import Iterable, Iterator

from etl.compile.context import CompileContext, CompileError
from etl.components.transforms.temporal_join.build import HIT, SIDE, L, R, joined, keyed_union
from etl.graph.model import Node

NOW = "_etl_now"


# ------------------------------------------------------------- the state of a key (pure Python, tested fast)
def new_state() -> dict:
    return {"l": [], "r": []}


def expire(st: dict, now_ms: int, ttl_ms: int | None) -> None:
    """Drop the rows stored `ttl_ms` or longer before `now_ms` (Flink's TTL: expired at stored + ttl <= now)."""
    if ttl_ms is not None:
        for s in ("l", "r"):
            st[s] = [e for e in st[s] if e[0] + ttl_ms > now_ms]


def take(st: dict, rows: Iterable[tuple[int, bool, tuple]], now_ms: int,
         ttl_ms: int | None) -> list[tuple[tuple, tuple]]:
    """Rows (side: 0 left / 1 right, whether a key is NULL, values) into the key's state `st` at processing time
    `now_ms`: the (left values, right values) pairs each row completes, in order."""
    expire(st, now_ms, ttl_ms)
    out: list[tuple[tuple, tuple]] = []
    for side, null_key, values in rows:
        if null_key:
            continue  # a NULL key equals no key: no pair, nothing kept
        mine, other = (st["l"], st["r"]) if side == 0 else (st["r"], st["l"])
        out.extend((values, o) if side == 0 else (o, values) for _, o in other)
        for e in mine:  # Flink keeps a count per distinct row: writing it again restarts its TTL
            if e[1] == values:
                e[0] = now_ms
        mine.append([now_ms, values])
    return out


# ------------------------------------------------------------------------------------------------- Spark
def processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    state_schema = StructType([StructField("blob", BinaryType(), True)])

    class RegularJoinProcessor(StatefulProcessor):
        def __init__(self, nl: int, nr: int, ttl_ms: int | None):
            self.nl, self.nr, self.ttl_ms = nl, nr, ttl_ms
            self.out_fields = (*[L.format(i) for i in range(nl)], *[R.format(j) for j in range(nr)], HIT)

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.value = handle.getValueState("regular", state_schema)

        def _state(self) -> dict:
            return pickle.loads(self.value.get()[0]) if self.value.exists() else new_state()

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            st = self._state()
            null_key = any(k is None for k in key)
            batch = [(r[NOW], r[SIDE], tuple(r[L.format(i)] for i in range(self.nl)) if r[SIDE] == 0
                      else tuple(r[R.format(j)] for j in range(self.nr))) for r in rows]
            now = batch[0][0] if batch else 0  # the micro-batch's time: one value in every row
            for left, right in take(st, ((side, null_key, values) for _, side, values in batch), now, self.ttl_ms):
                yield Row(**dict(zip(self.out_fields, (*left, *right, True), strict=True)))
            if st["l"] or st["r"]:
                self.value.update((pickle.dumps(st, protocol=5),))
            else:
                self.value.clear()

        def close(self) -> None:
            pass

    return RegularJoinProcessor


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from pyspark.sql import functions as F

    spec = node.spec
    edges = [e for e in node.inputs if e.role == "input"]
    left, right = inputs
    for i, df in enumerate((left, right)):
        missing = [k for k in spec.on if k not in df.columns]
        if missing:
            raise CompileError(f"regular_join '{node.id}': key(s) {', '.join(missing)} missing on the "
                               f"{('left', 'right')[i]} input", node, "on", code="E310")
    inp, lf, rf, names, out_type = keyed_union(left, right, spec.on, None, f"{edges[1].src}_",
                                               ([*left.columns], [*right.columns]))
    inp = inp.withColumn(NOW, F.unix_millis(F.current_timestamp()))  # in a stream: the micro-batch's time
    proc = processor_class()(len(lf), len(rf), spec.ttl.millis if spec.ttl is not None else None)
    tagged = inp.groupBy(*[F.col(f"`{k}`") for k in spec.on]).transformWithState(proc, out_type, "Append",
                                                                                   "None")
    return joined(tagged, lf, rf, names, spec.condition, spec.how)
