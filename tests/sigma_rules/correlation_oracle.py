"""Event-time oracle of Sigma correlation rules: the semantics of README "Sigma correlation rules" in plain Python.

Alerts are (epoch seconds, rule name, fields). Windows are [start, start + timespan) with starts on multiples
of timespan / slides (epoch-aligned, as Spark's `window`); per (correlation, group, window) holding alerts of
the referenced rules: event_count counts the alerts, value_count the distinct non-null values of the field,
temporal the distinct rules, temporal_ordered the longest prefix of the rule list found at strictly
increasing times, value_sum / value_avg the sum / mean of the field's values that are numbers (or text of one),
value_percentile / value_median their percentile by linear interpolation between the closest ranks (numpy's
default; the median is the 50th); a row when `value <op> count` (none when no value is a number).
"""

from __future__ import annotations

import datetime as dt
import operator
from dataclasses import dataclass

OPS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le, "eq": operator.eq,
       "neq": operator.ne}


@dataclass(frozen=True)
class Corr:
    rule: str
    kind: str
    rules: tuple[str, ...]
    seconds: int
    group: dict  # label -> {rule name: field}
    op: str
    count: float
    field: str | None = None
    percentile: int | None = None  # value_percentile (value_median: 50)


def _starts(t: float, size: int, slides: int) -> list[float]:
    step = size / slides
    first = (t // step) * step
    return [first - k * step for k in range(slides) if first - k * step > t - size]


def _in_order(rules: tuple[str, ...], times: dict[str, list[float]]) -> int:
    prev, n = None, 0
    for r in rules:
        later = [t for t in times.get(r, []) if prev is None or t > prev]
        if not later:
            break
        prev, n = min(later), n + 1
    return n


def _number(v: object) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return float(v)  # type: ignore[arg-type]
    except ValueError:
        return None


def _numeric(c: Corr, xs: list[float]) -> float | None:
    if not xs:
        return None
    if c.kind == "value_sum":
        return sum(xs)
    if c.kind == "value_avg":
        return sum(xs) / len(xs)
    xs = sorted(xs)
    pos = (len(xs) - 1) * (50 if c.kind == "value_median" else c.percentile) / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def correlate(alerts: list[tuple[float, str, dict]], corrs: list[Corr], slides: int = 1) -> list[dict]:
    out = []
    for c in corrs:
        cells: dict[tuple, list[tuple[float, str, dict]]] = {}
        for t, rule, fields in alerts:
            if rule not in c.rules:
                continue
            key = tuple((label, fields.get(per[rule])) for label, per in c.group.items())
            for s in _starts(t, c.seconds, slides):
                cells.setdefault((key, s), []).append((t, rule, fields))
        for (key, s), rows in cells.items():
            if c.kind == "event_count":
                value = len(rows)
            elif c.kind == "value_count":
                value = len({f.get(c.field) for _, _, f in rows} - {None})
            elif c.kind == "temporal":
                value = len({r for _, r, _ in rows})
            elif c.kind in ("value_sum", "value_avg", "value_percentile", "value_median"):
                value = _numeric(c, [x for x in (_number(f.get(c.field)) for _, _, f in rows) if x is not None])
                if value is None:
                    continue
            else:
                times: dict[str, list[float]] = {}
                for t, r, _ in rows:
                    times.setdefault(r, []).append(t)
                value = _in_order(c.rules, times)
            if OPS[c.op](value, c.count):
                out.append({"rule": c.rule, "group": {k: (None if v is None else str(v)) for k, v in key},
                            "window_start": _iso(s), "window_end": _iso(s + c.seconds), "value": value,
                            "rules_seen": sorted({r for _, r, _ in rows})})
    return sorted(out, key=_order)


def _order(row: dict) -> tuple:
    return (row["rule"], row["window_start"], sorted(row["group"].items(), key=str))
