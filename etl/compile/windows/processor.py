"""The transformWithState processor of the window state engine (compiled by etl/compile/windows/aggregate.py).

One processor instance per grouping key holds every window of that key in one value state:
{"w": {(start_ms, end_ms): accumulators}, "dirty": windows changed since the last provisional
row, "emitted": windows a row went out for, "last": processing time of the last provisional
emission, "closed": windows already emitted final and kept for late updates, "upd": closed
windows changed by late events since the last update row, "ulast": time of the last update}.

Per call (W = the current watermark; L = `allowed_lateness` with `late: update`, else 0):
1. windows with end <= W are final: emitted `_final = true`; with `late: update` they stay in
   state (closed) until W >= end + L, then their pending update goes out and they are dropped;
2. each event joins its windows (tumbling: one; sliding: size/slide; session: [t, t + gap],
   merged with every session it overlaps or touches, closed ones included). A window with
   end <= W is closed: with `late: update` and end + L > W, the event updates it (an update row,
   `_update = true`, keyed like the final row for upserting sinks); otherwise the event is too
   late: dropped, or once to the dead-letter output;
3. provisional rows (`emit.early`) of changed open windows go out when the key's last one is at
   least `early` old; update rows of changed closed windows when the last is at least `every`
   old (each call without `every`); held-back rows go out on a timer.
Timers: in event-time mode (the default, and every AvailableNow run, which must end) at window
ends, at ends of retention, and when the watermark has moved `early`/`every` further. In
processing-time mode (a continuous run with `emit.early`: `timers="processing"`) held-back
provisional and update rows go out within `early`/`every` of wall-clock time even for a key
without events, and windows close at the first timer after the watermark passed their end.
"""

from __future__ import annotations

import json
import pickle
from typing import Any
from collections.abc import Iterator

from etl.compile.windows.native import ERR, FINAL, PAYLOAD
from etl.compile.windows.state import (EVENT_MS, MS_COL, PREV, RETRACTED, UPDATE, VAL, WE, WS, AggregateFailed, Config,
                                       add, merge, new_acc, result, windows_of)


# C901: a class built in one closure (pyspark loaded lazily): its methods count here
def processor_class() -> type:  # noqa: C901
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

        def _load(self) -> dict:
            st = pickle.loads(self.value.get()[0]) if self.value.exists() else {"w": {}}
            for k, v in (("dirty", set()), ("emitted", set()), ("last", None), ("closed", set()), ("upd", set()),
                         ("ulast", None)):
                st.setdefault(k, v)
            return st

        def _save(self, st: dict) -> None:
            if st["w"]:
                self.value.update((pickle.dumps(st, protocol=5),))
            else:
                self.value.clear()

        def _row(self, values: dict) -> Any:
            return Row(**{f: values.get(f) for f in self.out_fields})

        def _emit(self, key: tuple, st: dict, win: tuple[int, int], final: bool, acc: Any = None,
                  retract: bool = False, update: bool = False) -> Any:
            d = dict(zip(self.cfg.keys, key, strict=True))
            d.update({WS: win[0], WE: win[1], FINAL: final, PREV: win in st["emitted"], RETRACTED: retract,
                      UPDATE: update})
            try:
                d.update(zip(self.cfg.names, result(self.cfg, st["w"][win] if acc is None else acc), strict=True))
            except AggregateFailed as e:  # the window's row is a dead letter: its key and bounds, and the error
                payload = {**dict(zip(self.cfg.keys, key, strict=True)), "window_start_ms": win[0], "window_end_ms": win[1]}
                d.update({ERR: f"window [{win[0]}, {win[1]}) ms: {e}", PAYLOAD: json.dumps(payload, default=str),
                          EVENT_MS: win[0]})
            return self._row(d)

        def _drop(self, st: dict, win: tuple[int, int]) -> None:
            del st["w"][win]
            for k in ("dirty", "emitted", "closed", "upd"):
                st[k].discard(win)

        def _close(self, key: tuple, st: dict, wm: int) -> Iterator[Any]:
            cfg = self.cfg
            for win in sorted(w for w in st["w"] if w[1] <= wm and w not in st["closed"]):
                yield self._emit(key, st, win, True)
                if cfg.update and win[1] + cfg.lateness_ms > wm:  # kept for late updates
                    st["dirty"].discard(win)
                    st["closed"].add(win)
                    st["emitted"].add(win)
                else:
                    self._drop(st, win)
            for win in sorted(w for w in st["closed"] if w[1] + cfg.lateness_ms <= wm):  # retention is over
                if win in st["upd"]:
                    yield self._emit(key, st, win, True, update=True)
                self._drop(st, win)

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

        def _updates(self, key: tuple, st: dict, now: int, force: bool = False) -> Iterator[Any]:
            cfg = self.cfg
            if not st["upd"]:
                return
            if force or cfg.every_ms is None or st["ulast"] is None or now - st["ulast"] >= cfg.every_ms:
                for win in sorted(st["upd"]):
                    yield self._emit(key, st, win, True, update=True)
                    st["emitted"].add(win)
                st["upd"] = set()
                st["ulast"] = now

        def _timers(self, st: dict, wm: int, now: int) -> None:
            """Event-time mode: timers at window ends and ends of retention, and with rows held back, when
            the watermark has moved `early`/`every` further. Processing-time mode: with rows held back or
            windows open, a timer `early` (or `every`) of wall-clock time later."""
            cfg = self.cfg
            held = [ms for ms, rows in ((cfg.early_ms, st["dirty"]), (cfg.every_ms, st["upd"])) if ms and rows]
            if cfg.timers == "processing":
                step = min([cfg.early_ms or 1000, *held])
                if st["w"]:
                    self.handle.registerTimer(now + max(step, 1))
                return
            wanted = {w[1] for w in st["w"] if w not in st["closed"] and w[1] > wm}
            wanted |= {end + cfg.lateness_ms for _, end in st["closed"] if end + cfg.lateness_ms > wm}
            if held:
                wanted.add(max(wm, 0) + max(min(held), 1))
            # a timer the key has already is not registered again (Spark logs a warning for each: 2,100 lines
            # in bench/window.py's late-update variant)
            for ms in wanted - set(self.handle.listTimers()):
                self.handle.registerTimer(ms)

        def _late(self, key: tuple, ms: int, payload: Any, wins: list, wm: int) -> Any:
            d = dict(zip(self.cfg.keys, key, strict=True))
            spans = ", ".join(f"[{s}, {e})" for s, e in wins)
            lateness = f" + allowed lateness {self.cfg.lateness_ms} ms" if self.cfg.update else ""
            d.update({ERR: f"late event: event time {ms} ms is behind the watermark {wm} ms; "
                           f"window(s) {spans}{lateness} already closed", PAYLOAD: payload, EVENT_MS: ms})
            return self._row(d)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            cfg = self.cfg
            wm = timerValues.getCurrentWatermarkInMs()
            now = timerValues.getCurrentProcessingTimeInMs()
            st = self._load()
            yield from self._close(key, st, wm)
            keep_ms = cfg.lateness_ms if cfg.update else 0
            nv = max((c for _, c, _ in cfg.aggs if c is not None), default=-1) + 1
            fresh: list[tuple[int, tuple]] = []
            for r in rows:
                ms = r[MS_COL]
                values = tuple(r[VAL.format(i)] for i in range(nv))
                wins = windows_of(cfg, ms)
                too_late = [w for w in wins if w[1] + keep_ms <= wm]
                if too_late and cfg.dead_letter:
                    yield self._late(key, ms, r[PAYLOAD], too_late, wm)
                if cfg.kind == "session":
                    if not too_late:
                        fresh.append((ms, values))
                    continue
                for win in wins:
                    if win[1] + keep_ms <= wm:
                        continue
                    acc = st["w"].get(win)
                    if acc is None:
                        acc = st["w"][win] = new_acc(cfg)
                    add(cfg, acc, ms, values)
                    if win[1] <= wm:  # a closed window, updated by a late event
                        st["closed"].add(win)
                        st["upd"].add(win)
                    else:
                        st["dirty"].add(win)
            if fresh:
                for win, acc, was_closed in self._sessions(st, fresh, wm):
                    yield self._emit(key, st, win, True, acc=acc, retract=True, update=was_closed)
            yield from self._early(key, st, now)
            yield from self._updates(key, st, now)
            self._timers(st, wm, now)
            self._save(st)

        def _sessions(self, st: dict, fresh: list, wm: int) -> list[tuple[tuple[int, int], list, bool]]:
            """Merge new events into the sessions (closed ones kept for late updates included); returns the
            emitted sessions whose bounds changed (retracted: the merged session goes out under its new bounds),
            with whether they were closed."""
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
            changed = set()
            for s, e, acc, combined in merged:
                win = (s, e)
                st["w"][win] = acc
                if combined or win not in old or win in st["dirty"] or win in st["upd"]:
                    changed.add(win)
            gone = [(w, old[w], w in st["closed"]) for w in sorted(st["emitted"]) if w not in st["w"]]
            st["emitted"] = {w for w in st["emitted"] if w in st["w"]}
            st["closed"] = {w for w in st["closed"] if w in st["w"]}
            st["dirty"] = {w for w in changed if w[1] > wm}
            late = {w for w in changed if w[1] <= wm}  # closed sessions changed by late events
            st["closed"] |= late
            st["upd"] = late | {w for w in st["upd"] if w in st["w"]}
            return gone

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            wm = timerValues.getCurrentWatermarkInMs()
            now = timerValues.getCurrentProcessingTimeInMs()
            st = self._load()
            yield from self._close(key, st, wm)
            force = self.cfg.timers != "processing"  # event time: the watermark moved on, held-back rows go out
            yield from self._early(key, st, now, force=force)
            yield from self._updates(key, st, now, force=force)
            self._timers(st, wm, now)
            self._save(st)

        def close(self) -> None:
            pass

    return WindowProcessor
