"""The state engine of windows: a transformWithState processor over RocksDB state.

Used (see etl/compile/windowing.py) when a window emits provisional results
(`emit.early`) or sends late events to the dead-letter output. One processor
instance per grouping key holds every open window of that key in one value
state: {(start_ms, end_ms): accumulators}, the windows changed since the last
provisional emission, and the processing time of that emission.

Per micro-batch N, for a key with input (W = the watermark of batch N):
1. windows with end <= W are final: emitted with `_final = true` and dropped;
2. each event joins its windows (tumbling: one; sliding: size/slide; session:
   [t, t + gap], merged with every open session it overlaps or touches); for a
   window with end <= W the event is late: the window is skipped and the event
   goes once to the dead-letter output (or is dropped);
3. with `emit.early`, the changed windows are emitted as provisional rows when
   the key's last provisional emission is at least `early` old (processing
   time); rows held back by that limit go out when the watermark has moved
   `early` further (an event-time timer), or with the final row.
Keys without input are woken by event-time timers: at window ends (final rows)
and for held-back provisional rows. Only event-time timers are used: Spark runs
a ProcessingTime-mode processor's query batch after batch forever, which would
keep `etl run --once` (AvailableNow) from ever finishing.
"""

from __future__ import annotations

import heapq
import pickle
from dataclasses import dataclass
from typing import Any, Iterator

from etl.compile.windowing import (ERR, ET_COL, FINAL, PAYLOAD, RETRACT, WindowError, WindowResult, key_columns,
                                   output_schema)

MS_COL = "_etl_ms"
VAL = "_etl_v{}"
WS, WE, PREV, RETRACTED, EVENT_MS = "_etl_ws", "_etl_we", "_etl_prev", "_etl_rt", "_etl_ems"
ALL_KEY = "_etl_all"
SIMPLE_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "string", "boolean", "timestamp")


@dataclass(frozen=True)
class Config:
    kind: str
    size_ms: int
    slide_ms: int
    gap_ms: int
    early_ms: int | None
    dead_letter: bool
    aggs: tuple[tuple[str, int | None, int | None], ...]  # (fn, value column index or None, n)
    keys: tuple[str, ...]  # grouping column names (output)
    names: tuple[str, ...]  # aggregate output names


# ------------------------------------------------------------- accumulators
def new_acc(cfg: Config) -> list:
    out: list = []
    for fn, _, _ in cfg.aggs:
        if fn == "count":
            out.append(0)
        elif fn == "avg":
            out.append([0, 0])
        elif fn in ("count_distinct", "approx_count_distinct", "collect_set"):
            out.append(set())
        elif fn in ("collect_list", "top_n"):
            out.append([])
        else:  # sum, min, max, first, last
            out.append(None)
    return out


def add(cfg: Config, acc: list, ms: int, values: tuple) -> None:
    for i, (fn, col, n) in enumerate(cfg.aggs):
        v = values[col] if col is not None else 1
        if v is None:
            continue
        if fn == "count":
            acc[i] += 1
        elif fn == "sum":
            acc[i] = v if acc[i] is None else acc[i] + v
        elif fn == "avg":
            acc[i][0] += v
            acc[i][1] += 1
        elif fn == "min":
            acc[i] = v if acc[i] is None or v < acc[i] else acc[i]
        elif fn == "max":
            acc[i] = v if acc[i] is None or v > acc[i] else acc[i]
        elif fn in ("count_distinct", "approx_count_distinct", "collect_set"):
            acc[i].add(v)
        elif fn == "collect_list":
            acc[i].append((ms, v))
        elif fn == "first":
            acc[i] = (ms, v) if acc[i] is None or (ms, v) < acc[i] else acc[i]
        elif fn == "last":
            acc[i] = (ms, v) if acc[i] is None or (ms, v) > acc[i] else acc[i]
        elif fn == "top_n":
            if len(acc[i]) < n:
                heapq.heappush(acc[i], v)
            elif v > acc[i][0]:
                heapq.heapreplace(acc[i], v)


def merge(cfg: Config, a: list, b: list) -> list:
    """Accumulators of two merged sessions."""
    out = []
    for i, (fn, _, n) in enumerate(cfg.aggs):
        x, y = a[i], b[i]
        if fn == "count":
            out.append(x + y)
        elif fn == "avg":
            out.append([x[0] + y[0], x[1] + y[1]])
        elif fn in ("count_distinct", "approx_count_distinct", "collect_set"):
            out.append(x | y)
        elif fn == "collect_list":
            out.append(x + y)
        elif fn == "top_n":
            out.append(heapq.nlargest(n, x + y)[::-1])
            heapq.heapify(out[-1])
        elif x is None or y is None:
            out.append(y if x is None else x)
        elif fn == "sum":
            out.append(x + y)
        elif fn in ("min", "first"):
            out.append(min(x, y))
        else:  # max, last
            out.append(max(x, y))
    return out


def result(cfg: Config, acc: list) -> list:
    out = []
    for i, (fn, _, _) in enumerate(cfg.aggs):
        x = acc[i]
        if fn == "avg":
            out.append(None if x[1] == 0 else x[0] / x[1])
        elif fn in ("count_distinct", "approx_count_distinct"):
            out.append(len(x))
        elif fn == "collect_set":
            out.append(sorted(x))
        elif fn == "collect_list":
            out.append([v for _, v in sorted(x)])
        elif fn == "top_n":
            out.append(sorted(x, reverse=True))
        elif fn in ("first", "last"):
            out.append(None if x is None else x[1])
        else:
            out.append(x)
    return out


def windows_of(cfg: Config, ms: int) -> list[tuple[int, int]]:
    if cfg.kind == "session":
        return [(ms, ms + cfg.gap_ms)]
    last = ms - (ms % cfg.slide_ms)
    out = []
    start = last
    while start > ms - cfg.size_ms:
        out.append((start, start + cfg.size_ms))
        start -= cfg.slide_ms
    return out[::-1]


# --------------------------------------------------------------- processor
def _processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    state_schema = StructType([StructField("blob", BinaryType(), True)])

    class WindowProcessor(StatefulProcessor):
        def __init__(self, cfg: Config, out_fields: tuple[str, ...]):
            self.cfg = cfg
            self.out_fields = out_fields

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.value = handle.getValueState("windows", state_schema)

        # state: {"w": {(start, end): acc}, "dirty": set, "emitted": set, "last": ms}
        def _load(self) -> dict:
            if self.value.exists():
                return pickle.loads(self.value.get()[0])
            return {"w": {}, "dirty": set(), "emitted": set(), "last": None}

        def _save(self, st: dict) -> None:
            if st["w"]:
                self.value.update((pickle.dumps(st, protocol=5),))
            else:
                self.value.clear()

        def _row(self, key: tuple, values: dict) -> Any:
            return Row(**{f: values.get(f) for f in self.out_fields})

        def _base(self, key: tuple) -> dict:
            return dict(zip(self.cfg.keys, key))

        def _emit(self, key: tuple, st: dict, win: tuple[int, int], final: bool, acc: Any = None,
                  retract: bool = False) -> Any:
            d = self._base(key)
            d.update({WS: win[0], WE: win[1], FINAL: final, PREV: win in st["emitted"], RETRACTED: retract})
            d.update(zip(self.cfg.names, result(self.cfg, st["w"][win] if acc is None else acc)))
            return self._row(key, d)

        def _close(self, key: tuple, st: dict, wm: int) -> Iterator[Any]:
            for win in sorted(w for w in st["w"] if w[1] <= wm):
                yield self._emit(key, st, win, True)
                del st["w"][win]
                st["dirty"].discard(win)
                st["emitted"].discard(win)

        def _early(self, key: tuple, st: dict, now: int, force: bool = False) -> Iterator[Any]:
            cfg = self.cfg
            if cfg.early_ms is None or not st["dirty"]:
                return
            if force or st["last"] is None or now - st["last"] >= cfg.early_ms:
                for win in sorted(st["dirty"]):
                    yield self._emit(key, st, win, False)
                    st["emitted"].add(win)
                st["dirty"] = set()
                st["last"] = now

        def _timers(self, st: dict, wm: int) -> None:
            """Event-time timers only (a ProcessingTime-mode processor would keep every query, even an
            AvailableNow one, running batches forever): one at each window end, and with provisional
            rows held back by the `early` limit, one when the watermark has moved `early` further."""
            cfg = self.cfg
            for end in {end for _, end in st["w"]}:
                self.handle.registerTimer(end)
            if cfg.early_ms is not None and st["dirty"]:
                self.handle.registerTimer(max(wm, 0) + max(cfg.early_ms, 1))

        def _late(self, key: tuple, ms: int, payload: Any, wins: list, wm: int) -> Any:
            d = self._base(key)
            spans = ", ".join(f"[{s}, {e})" for s, e in wins)
            d.update({ERR: f"late event: event time {ms} ms is behind the watermark {wm} ms; "
                           f"window(s) {spans} already closed", PAYLOAD: payload, EVENT_MS: ms})
            return self._row(key, d)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            cfg = self.cfg
            wm = timerValues.getCurrentWatermarkInMs()
            now = timerValues.getCurrentProcessingTimeInMs()
            st = self._load()
            yield from self._close(key, st, wm)
            nv = max((c for _, c, _ in cfg.aggs if c is not None), default=-1) + 1
            fresh: list[tuple[int, tuple]] = []
            for r in rows:
                ms = r[MS_COL]
                values = tuple(r[VAL.format(i)] for i in range(nv))
                wins = windows_of(cfg, ms)
                late = [w for w in wins if w[1] <= wm]
                if late and cfg.dead_letter:
                    yield self._late(key, ms, r[PAYLOAD], late, wm)
                if cfg.kind == "session":
                    if not late:
                        fresh.append((ms, values))
                    continue
                for win in wins:
                    if win[1] <= wm:
                        continue
                    acc = st["w"].get(win)
                    if acc is None:
                        acc = st["w"][win] = new_acc(cfg)
                    add(cfg, acc, ms, values)
                    st["dirty"].add(win)
            if fresh:
                for win, acc in self._sessions(st, fresh):
                    yield self._emit(key, st, win, True, acc=acc, retract=True)
            yield from self._early(key, st, now)
            self._timers(st, wm)
            self._save(st)

        def _sessions(self, st: dict, fresh: list) -> list[tuple[tuple[int, int], list]]:
            """Merge new events into the open sessions; returns the provisionally emitted sessions whose
            bounds changed (their rows are retracted: the merged session is emitted under its new bounds)."""
            cfg = self.cfg
            spans = [(s, e, st["w"][(s, e)]) for s, e in st["w"]]
            for ms, values in fresh:
                acc = new_acc(cfg)
                add(cfg, acc, ms, values)
                spans.append((ms, ms + cfg.gap_ms, acc))
            spans.sort(key=lambda x: (x[0], x[1]))
            merged: list[list] = []  # [start, end, acc, combined]; sessions touching (start <= end) merge
            for s, e, acc in spans:
                if merged and s <= merged[-1][1]:
                    m = merged[-1]
                    m[1] = max(m[1], e)
                    m[2] = merge(cfg, m[2], acc)
                    m[3] = True
                else:
                    merged.append([s, e, acc, False])
            old = dict(st["w"])
            st["w"] = {}
            dirty = set()
            for s, e, acc, combined in merged:
                win = (s, e)
                st["w"][win] = acc
                if combined or win not in old or win in st["dirty"]:
                    dirty.add(win)
            gone = [(w, old[w]) for w in sorted(st["emitted"]) if w not in st["w"]]
            st["emitted"] = {w for w in st["emitted"] if w in st["w"]}
            st["dirty"] = dirty
            return gone

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            wm = timerValues.getCurrentWatermarkInMs()
            now = timerValues.getCurrentProcessingTimeInMs()
            st = self._load()
            yield from self._close(key, st, wm)
            yield from self._early(key, st, now, force=True)  # the watermark moved on: held-back rows go out
            self._timers(st, wm)
            self._save(st)

        def close(self) -> None:
            pass

    return WindowProcessor


# --------------------------------------------------------------- compile
def _state_type(dt: Any) -> Any:
    """Timestamps travel through the processor as epoch microseconds."""
    from pyspark.sql.types import ArrayType, LongType, TimestampType

    if isinstance(dt, TimestampType):
        return LongType()
    if isinstance(dt, ArrayType) and isinstance(dt.elementType, TimestampType):
        return ArrayType(LongType(), True)
    return dt


def _from_state(col: Any, dt: Any) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, TimestampType

    if isinstance(dt, TimestampType):
        return F.timestamp_micros(col)
    if isinstance(dt, ArrayType) and isinstance(dt.elementType, TimestampType):
        return F.transform(col, lambda x: F.timestamp_micros(x))
    return col


def state_aggregate(df: Any, spec: Any, et: str = ET_COL, *, stage: str, payload: Any = None,
                    source_columns: list[str] | None = None, guard_having: Any = None) -> WindowResult:
    """`df` carries the watermarked timestamp column `et`. See the module docstring.

    guard_having(frame, columns) -> (frame, value, reason, payload): `having` evaluated so that a row on which
    it throws is a dead letter (reason and payload NULL on the other rows); None: plain `having`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    early_ms = int(round(spec.emit.early * 1000)) if spec.emit.early is not None else None
    dead_letter = spec.emit.late == "dead_letter"
    types = dict(df.dtypes)
    fields: list[str] = []
    aggs = []
    for a in spec.aggregates:
        if a.fn == "count" and (a.field is None or a.field == "*"):
            aggs.append((a.fn, None, None))
            continue
        t = types.get(a.field)
        if t is None or t not in SIMPLE_TYPES:
            raise WindowError(f"aggregate {a.fn} over '{a.field}' ({t or 'nested field'}): with early emission or "
                              "late dead letters, aggregate fields must be top-level numbers, strings, booleans "
                              "or timestamps", "aggregates", code="E404")
        if a.field not in fields:
            fields.append(a.field)
        aggs.append((a.fn, fields.index(a.field), a.n))
    schema = output_schema(df, spec, et)
    keys = tuple(spec.group_by) or (ALL_KEY,)
    cfg = Config(spec.kind, _ms(spec.size), _ms(spec.slide or spec.size), _ms(spec.gap), early_ms, dead_letter,
                 tuple(aggs), keys, tuple(a.as_ for a in spec.aggregates))

    cols = [F.col(f"`{g}`") for g in spec.group_by] or [F.lit(0).alias(ALL_KEY)]
    cols.append(F.unix_millis(F.col(f"`{et}`")).alias(MS_COL))
    for i, f in enumerate(fields):
        v = F.col(f"`{f}`")
        cols.append((F.unix_micros(v) if types[f] == "timestamp" else v).alias(VAL.format(i)))
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
    out_fields += [StructField(f.name, _state_type(f.dataType), True) for f in agg_fields]
    out_fields += [StructField(FINAL, BooleanType(), True), StructField(PREV, BooleanType(), True),
                   StructField(RETRACTED, BooleanType(), True),
                   StructField(ERR, StringType(), True), StructField(PAYLOAD, StringType(), True),
                   StructField(EVENT_MS, LongType(), True)]
    out_type = StructType(out_fields)
    proc = _processor_class()(cfg, tuple(f.name for f in out_fields))
    tagged = inp.groupBy(*[F.col(f"`{k}`") for k in keys]).transformWithState(proc, out_type, "Append", "EventTime")

    names = [*spec.group_by, "window_start", "window_end", *[a.as_ for a in spec.aggregates]]
    conv = tagged.select(
        *[F.col(f"`{g}`") for g in spec.group_by],
        F.timestamp_millis(F.col(WS)).alias("window_start"), F.timestamp_millis(F.col(WE)).alias("window_end"),
        *[_from_state(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in agg_fields],
        F.col(FINAL), F.col(PREV), F.col(RETRACTED), F.col(ERR), F.col(PAYLOAD), F.col(EVENT_MS))
    if spec.having and guard_having is not None:  # a window row on which `having` throws: a dead letter
        conv, value, reason, row = guard_having(conv, names)
        conv = conv.withColumn(ERR, F.coalesce(F.col(ERR), reason)).withColumn(PAYLOAD, F.coalesce(F.col(PAYLOAD), row))
        having = F.coalesce(value, F.lit(False))
        dead_letter = True
    else:
        having = F.coalesce(F.expr(spec.having), F.lit(False)) if spec.having else F.lit(True)
    is_result = F.col(ERR).isNull()
    extra: list[Any] = []
    if early_ms is None:
        keep = having
    else:
        # a final row failing `having` still goes out, flagged _retract, when a provisional row went before;
        # so does the processor's retraction of a session whose bounds changed after a provisional row
        keep = having | (F.col(FINAL) & F.col(PREV)) | F.col(RETRACTED)
        extra = [F.col(FINAL), (F.col(RETRACTED) | (F.col(FINAL) & ~having)).alias(RETRACT)]
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
                        final_column=FINAL if early_ms is not None else None)


def _ms(d: Any) -> int:
    return int(round(float(d) * 1000)) if d is not None else 0
