"""temporal_join: Flink's event-time temporal join on transformWithState (semantics: etl.components.transforms.temporal_join.spec).

Both inputs are unioned into one stream keyed by the join's keys: each row tagged with its side and its event time
(epoch microseconds), the probe's columns or the versions' (the other side's NULL). One value state per key holds
{"v": {time: a version's values}, "p": [(time, arrival, probe values)], "n": next arrival number}. Per micro-batch a
key's rows are read: a version is stored under its time (a second one at the same time replaces it); a probe row is
buffered unless the watermark has passed its time (late: dropped, as Flink's operator does). An event-time timer at
the earliest buffered probe's time fires once the watermark passes it: every buffered row at or before the
watermark goes out, in arrival order, with the version whose time is the largest at or before its own (none: an
inner join drops the row, a left join writes NULLs), and the versions older than the newest at or before the
watermark are dropped. Timestamps cross the processor as epoch microseconds (etl.compile.windows.state); the
watermark is in milliseconds. A replayed micro-batch starts from the previous batch's state: the same rows go out.
"""

from __future__ import annotations

import bisect
import pickle
from typing import Any
from collections.abc import Iterator

from etl.compile.context import CompileContext, CompileError
from etl.compile.joining import LT, RT
from etl.components.transforms.join.build import side_time
from etl.compile.watermark import with_event_time
from etl.compile.windows.native import WindowError, event_time_column
from etl.compile.windows.state import from_state, state_type, to_state
from etl.graph.model import Node

SIDE, US, HIT = "_etl_side", "_etl_us", "_etl_hit"
L, R = "_etl_l{}", "_etl_r{}"


# ------------------------------------------------------------- the state of a key (pure Python, tested fast)
def new_state() -> dict:
    return {"v": {}, "p": [], "n": 0}


def take(st: dict, rows: Iterator[tuple[int, int | None, bool, tuple]], wm_ms: int) -> None:
    """Rows (side: 0 probe / 1 version, time us, whether a key is NULL, values) into the key's state `st`."""
    for side, us, null_key, values in rows:
        if us is None:
            continue  # no event time: nothing to order it by (Spark's windows drop such rows too)
        if side == 1:
            if not null_key:
                st["v"][us] = values
        elif us > wm_ms * 1000:  # a probe row the watermark has passed is late: its version may be gone
            st["p"].append((us, st["n"], values))
            st["n"] += 1


def fire(st: dict, wm_ms: int) -> list[tuple[tuple, tuple | None]]:
    """(probe values, its version's values or None) of each buffered probe row at or before the watermark, in
    arrival order; they leave the state, and so do the versions older than the newest one at or before it."""
    limit = wm_ms * 1000
    ready = sorted((p for p in st["p"] if p[0] <= limit), key=lambda p: p[1])
    st["p"] = [p for p in st["p"] if p[0] > limit]
    times = sorted(st["v"])
    out = []
    for us, _, values in ready:
        i = bisect.bisect_right(times, us)
        out.append((values, st["v"][times[i - 1]] if i else None))
    keep = bisect.bisect_right(times, limit) - 1  # the newest version at or before the watermark
    for t in times[:max(keep, 0)]:
        del st["v"][t]
    return out


def next_timer(st: dict) -> int | None:
    """The watermark (ms) at which the earliest buffered probe row is ready, None when none is buffered."""
    return -(-min(p[0] for p in st["p"]) // 1000) if st["p"] else None


# ------------------------------------------------------------------------------------------------- Spark
def processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    state_schema = StructType([StructField("blob", BinaryType(), True)])

    class TemporalJoinProcessor(StatefulProcessor):
        def __init__(self, nl: int, nr: int, inner: bool):
            self.nl, self.nr, self.inner = nl, nr, inner
            self.out_fields = (*[L.format(i) for i in range(nl)], *[R.format(j) for j in range(nr)], HIT)

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.value = handle.getValueState("temporal", state_schema)

        def _emit(self, st: dict, wm: int) -> Iterator[Any]:
            for probe, version in fire(st, wm):
                if version is None and self.inner:
                    continue
                yield Row(**dict(zip(self.out_fields, (*probe, *(version or (None,) * self.nr),
                                                       version is not None), strict=True)))
            timer = next_timer(st)
            if timer is not None and timer not in set(self.handle.listTimers()):
                self.handle.registerTimer(timer)
            if st["p"] or st["v"]:
                self.value.update((pickle.dumps(st, protocol=5),))
            else:
                self.value.clear()

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            wm = timerValues.getCurrentWatermarkInMs()
            st = pickle.loads(self.value.get()[0]) if self.value.exists() else new_state()
            null_key = any(k is None for k in key)
            take(st, ((r[SIDE], r[US], null_key,
                       tuple(r[L.format(i)] for i in range(self.nl)) if r[SIDE] == 0 else
                       tuple(r[R.format(j)] for j in range(self.nr))) for r in rows), wm)
            yield from self._emit(st, wm)

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            wm = timerValues.getCurrentWatermarkInMs()
            st = pickle.loads(self.value.get()[0]) if self.value.exists() else new_state()
            yield from self._emit(st, wm)

        def close(self) -> None:
            pass

    return TemporalJoinProcessor


def keyed_union(left: Any, right: Any, on: list[str], times: tuple[str, str] | None, right_prefix: str,
                columns: tuple[list[str], list[str]]) -> tuple[Any, list, list, list[str], Any]:
    """Both inputs as one stream keyed by `on` (each row tagged with its side, its event time in epoch microseconds
    when `times` names the sides' time columns, its own columns L0.. or R0.. (the right's keys left out), the other
    side's NULL), the sides' fields, the output names (the right's renamed as the join renames: etl.compile.joining)
    and the processor's output type (L.., R.., HIT); `columns` are the sides' own columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, StructField, StructType

    lf = [f for f in left.schema.fields if f.name in columns[0]]
    rf = [f for f in right.schema.fields if f.name in columns[1] and f.name not in on]
    taken = {f.name.lower() for f in lf}
    names = [f.name for f in lf] + [right_prefix + f.name if f.name.lower() in taken else f.name for f in rf]

    def side(df: Any, n: int, time: str | None) -> Any:
        def vals(fields: list, fmt: str, own: bool) -> list:
            return [(to_state(f.name, f.dataType) if own else F.lit(None).cast(state_type(f.dataType)))
                    .alias(fmt.format(i)) for i, f in enumerate(fields)]

        us = [] if time is None else [F.unix_micros(F.col(f"`{time}`")).alias(US)]
        return df.select(*[F.col(f"`{k}`").alias(k) for k in on], F.lit(n).alias(SIDE), *us,
                         *vals(lf, L, n == 0), *vals(rf, R, n == 1))

    inp = side(left, 0, times and times[0]).unionByName(side(right, 1, times and times[1]))
    out_type = StructType([*[StructField(L.format(i), state_type(f.dataType), True) for i, f in enumerate(lf)],
                           *[StructField(R.format(j), state_type(f.dataType), True) for j, f in enumerate(rf)],
                           StructField(HIT, BooleanType(), True)])
    return inp, lf, rf, names, out_type


def joined(tagged: Any, lf: list, rf: list, names: list[str], condition: str | None, how: str) -> Any:
    """The processor's rows (L.., R.., HIT) under the output names, `condition` applied to the pairs (HIT: the
    right side is there): false is no match (inner: the row dropped, left: NULL right columns)."""
    from pyspark.sql import functions as F

    cols = [from_state(F.col(L.format(i)), f.dataType).alias(names[i]) for i, f in enumerate(lf)]
    rcols = [(from_state(F.col(R.format(j)), f.dataType), names[len(lf) + j]) for j, f in enumerate(rf)]
    out = tagged.select(*cols, *[c.alias(n) for c, n in rcols], F.col(HIT))
    if condition:  # on the version a row joins: false is no version (Flink's join condition)
        ok = F.col(HIT) & F.coalesce(F.expr(condition), F.lit(False))
        if how == "inner":
            out = out.where(ok)
        else:
            out = out.select(*[F.col(f"`{n}`") for n in names[:len(lf)]],
                             *[F.when(ok, F.col(f"`{n}`")).alias(n) for _, n in rcols])
    return out.drop(HIT)


def temporal_join(left: Any, right: Any, spec: Any, lt: str, rt: str, right_prefix: str,
                  columns: tuple[list[str], list[str]]) -> Any:
    """The temporal join of streaming `left` (probe, watermarked time column `lt`) and `right` (versions, `rt`),
    whose own columns are `columns` (without a time column event_time_column added)."""
    from pyspark.sql import functions as F

    inp, lf, rf, names, out_type = keyed_union(left, right, spec.on, (lt, rt), right_prefix, columns)
    proc = processor_class()(len(lf), len(rf), spec.how == "inner")
    tagged = inp.groupBy(*[F.col(f"`{k}`") for k in spec.on]).transformWithState(proc, out_type, "Append",
                                                                                   "EventTime")
    return joined(tagged, lf, rf, names, spec.condition, spec.how)


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    spec = node.spec
    edges = [e for e in node.inputs if e.role == "input"]
    left, right = inputs
    times, columns = [], ([*left.columns], [*right.columns])
    for i, (df, own) in enumerate(((left, spec.left_time), (right, spec.right_time))):
        et = side_time(ctx, node, edges[i].src, own)
        where = ("left_time", "right_time")[i]
        if et is None:
            raise CompileError(f"temporal_join '{node.id}': the {('probe', 'versions')[i]} input has no event time",
                               node, where, f"set `{where}: {{field: ts, watermark: 30s}}` or `event_time` on its "
                               "source", code="E321")
        if own is not None:
            df = with_event_time(df, node, own)
        missing = [k for k in spec.on if k not in df.columns]
        if missing:
            raise CompileError(f"temporal_join '{node.id}': key(s) {', '.join(missing)} missing on the "
                               f"{('probe', 'versions')[i]} input", node, "on", code="E310")
        try:
            df, col = event_time_column(df, et.field, et.watermark, name=(LT, RT)[i])
        except WindowError as e:
            raise CompileError(f"temporal_join '{node.id}': {e}", node, where, code="E320") from None
        times.append((df, col))
    (left, lt), (right, rt) = times
    return temporal_join(left, right, spec, lt, rt, f"{edges[1].src}_", columns)
