"""A pure-Python oracle for windows: replays micro-batches the way the engines define them.

It keeps raw events per window (no incremental accumulators) and computes each
aggregate from scratch when a row is emitted, so it shares no logic with
etl/compile/windows/state.py.

Watermark: W[0] = 0; W[N] = max(W[N-1], max event time of batches 0..N-1 - delay).
A window is emitted (final) in batch N when W[N] >= its end.
Lateness rule:
  "previous" (native engine, Spark's rule): an event of batch N is late for a window
             whose end <= W[N-1]; windows close after the batch's events are added;
  "current"  (state engine): late when end <= W[N]; windows close before the events are added.
After the last batch one empty batch runs (Spark's no-data batch) with the final watermark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable


@dataclass
class OracleResult:
    final: list[dict] = field(default_factory=list)
    provisional: list[dict] = field(default_factory=list)
    late: list[dict] = field(default_factory=list)  # events late for at least one of their windows


def watermarks(batches: list[list[dict]], delay_ms: int, ts: str = "ts") -> list[int]:
    out, wm, mx = [], 0, None
    for b in batches + [[]]:
        out.append(wm)
        for e in b:
            mx = e[ts] if mx is None else max(mx, e[ts])
        if mx is not None:
            wm = max(wm, mx - delay_ms)
    return out


def aggregate(fn: str, field_name: str | None, n: int | None, events: list[dict], ts: str = "ts") -> Any:
    if fn == "count" and field_name in (None, "*"):
        return len(events)
    pairs = [(e[ts], e[field_name]) for e in events if e.get(field_name) is not None]
    vals = [v for _, v in pairs]
    if fn == "count":
        return len(vals)
    if fn == "sum":
        return sum(vals) if vals else None
    if fn == "avg":
        return sum(vals) / len(vals) if vals else None
    if fn == "min":
        return min(vals) if vals else None
    if fn == "max":
        return max(vals) if vals else None
    if fn in ("count_distinct", "approx_count_distinct"):
        return len(set(vals))
    if fn == "collect_list":
        return [v for _, v in sorted(pairs)]
    if fn == "collect_set":
        return sorted(set(vals))
    if fn == "first":
        return min(pairs)[1] if pairs else None
    if fn == "last":
        return max(pairs)[1] if pairs else None
    if fn == "top_n":
        return sorted(vals, reverse=True)[:n]
    raise ValueError(fn)


def _windows(kind: str, size: int, slide: int, t: int, offset: int = 0, step: int = 0) -> list[tuple[int, int]]:
    """Flink's assigners: window starts at offset + k * slide; a cumulating window's start at offset + k * size,
    its ends every step after it, up to the size."""
    if kind == "cumulating":
        start = t - (t - offset) % size
        return [(start, end) for end in range(start + step, start + size + 1, step) if end > t]
    slide = slide if kind == "sliding" else size
    out = []
    start = t - (t - offset) % slide
    while start + size > t:
        if start <= t:
            out.append((start, start + size))
        start -= slide
    return sorted(out)


# C901: the oracle follows Flink's window steps one by one
def simulate(batches: list[list[dict]], spec: Any, *, delay_ms: int, rule: str, early: bool = False,  # noqa: C901
             having: Callable[[dict], bool] | None = None, ts: str = "ts", drain: bool = False) -> OracleResult:
    """spec: a WindowTransform (kind, size, slide, gap, group_by, aggregates).

    early=True: after each batch, every window that received events is emitted provisionally
    (the state engine with an early interval shorter than a batch).
    drain=True: after the last batch the watermark passes everything (`etl run --drain`): every open window closes."""
    kind = spec.kind
    ms = lambda d: int(round(float(d) * 1000)) if d is not None else 0  # noqa: E731
    size, slide, gap = ms(spec.size), ms(spec.slide), ms(spec.gap)
    keys = list(spec.group_by)
    wms = watermarks(batches, delay_ms, ts)
    res = OracleResult()
    # open windows: (group tuple, start, end) -> list of events; provisional rows emitted for them
    open_: dict[tuple, list[dict]] = {}
    emitted: set[tuple] = set()

    def row(w: tuple, final: bool) -> dict:
        g, s, e = w
        r = {"window_start": s, "window_end": e, **dict(zip(keys, g, strict=True))}
        for a in spec.aggregates:
            r[a.as_] = aggregate(a.fn, a.field, a.n, open_[w], ts)
        if early:
            r["_final"] = final
        return r

    def passes(r: dict) -> bool:
        return having is None or bool(having(r))

    def close(wm: int) -> None:
        for w in sorted(w for w in open_ if w[2] <= wm):
            r = row(w, True)
            if not early:
                if passes(r):
                    res.final.append(r)
            elif passes(r):
                res.final.append({**r, "_retract": False})
            elif w in emitted:
                res.final.append({**r, "_retract": True})
            del open_[w]
            emitted.discard(w)

    for n, batch in enumerate(batches + [[]]):
        wm = wms[n]
        late_wm = wm if rule == "current" else (wms[n - 1] if n > 0 else 0)
        if rule == "current":
            close(wm)
        changed: set[tuple] = set()
        before = {w: list(open_[w]) for w in emitted if w in open_}
        for e in batch:
            g = tuple(e.get(k) for k in keys)
            t = e[ts]
            wins = [(t, t + gap)] if kind == "session" else _windows(kind, size, slide, t, ms(spec.offset),
                                                                      ms(spec.step))
            if any(end <= late_wm for _, end in wins):
                res.late.append(e)
            if kind == "session":
                if wins[0][1] > late_wm:
                    changed |= _join_session(open_, g, t, gap, e)
                continue
            for s, end in wins:
                if end > late_wm:
                    open_.setdefault((g, s, end), []).append(e)
                    changed.add((g, s, end))
        if kind == "session" and early:
            for w in sorted(emitted):
                if w not in open_:  # bounds changed: retract the old provisional row
                    open_[w] = before[w]
                    res.final.append({**row(w, True), "_retract": True})
                    del open_[w]
                    emitted.discard(w)
        if rule == "previous":
            close(wm)
        if early:
            for w in sorted(changed):
                if w in open_:
                    r = row(w, False)
                    emitted.add(w)
                    if passes(r):
                        res.provisional.append({**r, "_retract": False})
    if drain:
        close(2 ** 62)
    return res


def _join_session(open_: dict, g: tuple, t: int, gap: int, e: dict) -> set[tuple]:
    """Add event e to the sessions of group g; merge every session [t, t+gap] overlaps or touches."""
    s, end, events = t, t + gap, [e]
    merged = True  # merging can chain: repeat until stable
    while merged:
        merged = False
        for w in sorted(w for w in open_ if w[0] == g):
            _, ws, we = w
            if ws <= end and s <= we:
                s, end = min(s, ws), max(end, we)
                events = open_.pop(w) + events
                merged = True
    open_[(g, s, end)] = events
    return {(g, s, end)}
