"""Oracle for late firing (`emit: {late: update, allowed_lateness: L}`) on the state engine.

Raw events per window, aggregates recomputed from scratch (tests/windows/oracle.aggregate);
no code shared with etl/compile/windows/processor.py. Watermarks as in oracle.py; the state
engine's rule: in batch N, windows with end <= W[N] close first, then the batch's events join.

* A window closes once (a final row, `_update` false) and is kept until W >= end + L.
* An event for a closed window with end + L > W updates it: after the batch, one update row
  per changed window (`_final` true, `_update` true). Events with end + L <= W are too late.
* A session a late event merges with others changes bounds: the rows that went out under the
  old bounds are retracted (`_retract` true, `_update` true when that session had closed).
* With `having`, a row failing it goes out only when a row went out for its window before,
  flagged `_retract` (the sink deletes the key).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from tests.windows.oracle import OracleResult, _join_session, _windows, aggregate, watermarks


# C901: the oracle follows Flink's window steps one by one
def simulate_updates(batches: list[list[dict]], spec: Any, *, delay_ms: int, lateness_ms: int,  # noqa: C901
                     having: Callable[[dict], bool] | None = None, ts: str = "ts") -> OracleResult:
    ms = lambda d: int(round(float(d) * 1000)) if d is not None else 0  # noqa: E731
    size, slide, gap = ms(spec.size), ms(spec.slide), ms(spec.gap)
    keys = list(spec.group_by)
    wms = watermarks(batches, delay_ms, ts)
    res = OracleResult()
    wins: dict[tuple, list[dict]] = {}  # (group, start, end) -> events, open and closed-but-kept
    closed: set[tuple] = set()
    emitted: set[tuple] = set()  # windows a row went out for
    upd: set[tuple] = set()

    def out(w: tuple, events: list[dict], *, update: bool, retract: bool = False) -> None:
        g, s, e = w
        r = {"window_start": s, "window_end": e, **dict(zip(keys, g, strict=True))}
        for a in spec.aggregates:
            r[a.as_] = aggregate(a.fn, a.field, a.n, events, ts)
        ok = (having is None or bool(having(r))) and not retract
        if ok or w in emitted or retract:
            res.final.append({**r, "_final": True, "_retract": not ok, "_update": update})

    for n, batch in enumerate(batches + [[]]):
        wm = wms[n]
        for w in sorted(w for w in wins if w[2] <= wm and w not in closed):
            out(w, wins[w], update=False)
            if w[2] + lateness_ms > wm:
                closed.add(w)
                emitted.add(w)
            else:
                del wins[w]
        for w in sorted(w for w in closed if w[2] + lateness_ms <= wm):
            if w in upd:
                out(w, wins[w], update=True)
            del wins[w]
            closed.discard(w)
            emitted.discard(w)
            upd.discard(w)
        before = {w: list(wins[w]) for w in emitted}
        was_closed = set(closed)
        changed: set[tuple] = set()
        for e in batch:
            g, t = tuple(e.get(k) for k in keys), e[ts]
            spans = [(t, t + gap)] if spec.kind == "session" else _windows(spec.kind, size, slide, t)
            if any(end + lateness_ms <= wm for _, end in spans):
                res.late.append(e)
            if spec.kind == "session":
                if t + gap + lateness_ms > wm:
                    changed = {c for c in changed if c in wins} | _join_session(wins, g, t, gap, e)
                continue
            for s, end in spans:
                if end + lateness_ms > wm:
                    wins.setdefault((g, s, end), []).append(e)
                    changed.add((g, s, end))
        for w in sorted(emitted):
            if w not in wins:  # a session whose bounds changed: its row is retracted
                out(w, before[w], update=w in was_closed, retract=True)
                emitted.discard(w)
        closed &= set(wins)
        upd &= set(wins)
        for w in changed:
            if w in wins and w[2] <= wm:
                closed.add(w)
                upd.add(w)
        for w in sorted(upd):
            out(w, wins[w], update=True)
            emitted.add(w)
        upd.clear()
    return res
