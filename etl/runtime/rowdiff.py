"""Comparing rows as `etl test` does: timestamps as instants, floats to 1e-9 relative, unordered or in order."""

from __future__ import annotations

import json
import math
from datetime import date, datetime, UTC
from decimal import Decimal
from typing import Any


def _canon_time(t: datetime) -> str:
    if t.tzinfo is not None:
        t = t.astimezone(UTC).replace(tzinfo=None)
    text = t.isoformat(timespec="microseconds").rstrip("0").rstrip(".")
    return text + "Z"


def canon(v: Any) -> Any:
    """A comparable form: timestamps as UTC ISO text, decimals as floats, containers recursively."""
    if isinstance(v, datetime):
        return _canon_time(v)
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, str) and len(v) >= 16 and v[4:5] == "-" and v[10:11] in ("T", " "):
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
            return _canon_time(t if t.tzinfo else t.replace(tzinfo=UTC))
        except ValueError:
            return v
    if isinstance(v, dict):
        return {str(k): canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    return v


def same(a: Any, b: Any) -> bool:
    a, b = canon(a), canon(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def row_matches(expected: dict, actual: dict) -> bool:
    return all(k in actual and same(v, actual[k]) for k, v in expected.items())


def compare(expected: list[dict], actual: list[dict], ordered: bool) -> tuple[list[dict], list[dict]]:
    """(expected rows not found, actual rows not matched)."""
    if ordered:
        missing, extra = [], []
        for i in range(max(len(expected), len(actual))):
            e = expected[i] if i < len(expected) else None
            a = actual[i] if i < len(actual) else None
            if e is None:
                assert a is not None  # i < len(actual)
                extra.append(a)
            elif a is None or not row_matches(e, a):
                missing.append(e)
                if a is not None:
                    extra.append(a)
        return missing, extra
    left = list(range(len(actual)))
    missing = []
    for e in sorted(expected, key=lambda r: -len(r)):
        hit = next((i for i in left if row_matches(e, actual[i])), None)
        if hit is None:
            missing.append(e)
        else:
            left.remove(hit)
    return missing, [actual[i] for i in left]


def show_row(row: dict, keys: list[str] | None = None) -> str:
    shown = {k: canon(row.get(k)) for k in keys} if keys else {k: canon(v) for k, v in row.items()}
    return json.dumps(shown, default=str, sort_keys=False)


def diff_text(what: str, expected: list[dict], actual: list[dict], missing: list[dict], extra: list[dict]) -> str:
    keys: list[str] = []
    for r in expected:
        keys.extend(k for k in r if k not in keys)
    lines = [f"{what}: expected {len(expected)} rows, got {len(actual)}"]
    lines += [f"  - {show_row(r)}" for r in missing]
    lines += [f"  + {show_row(r, keys or None)}" for r in extra]
    return "\n".join(lines)


