"""Intervals and durations of the SQL front-end: INTERVAL literals (seconds), Flink's duration options
('10 min'), and the text of a duration in a spec."""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from etl.spec.base import Duration
from etl.sql.relation import pos
from etl.sql.script import SqlSyntax

UNITS = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def seconds(b: Any, node: exp.Expression) -> float:
    if isinstance(node, exp.Interval):
        value: Any = node.this.this if isinstance(node.this, exp.Literal) else None
        unit_arg = node.args.get("unit")
        unit = (unit_arg.name if unit_arg is not None else "").upper()
        if value is not None and " " in str(value).strip() and not unit:
            value, unit = str(value).split()[0], str(value).split()[1].upper()
        unit = unit[:-1] if unit.endswith("S") and unit[:-1] in UNITS else unit
        if unit in UNITS and value is not None:
            if not re.fullmatch(r"\d+(\.\d+)?", str(value).strip()):  # float() takes 'nan', 'inf', '1e9', '1_0'
                raise SqlSyntax(f"interval value '{value}' is not a number of {unit.lower()}s", pos(b, node),
                                "write digits, e.g. INTERVAL '5' SECOND (Flink's interval literal)", "E011")
            return float(value) * UNITS[unit]
    raise SqlSyntax("expected an interval such as INTERVAL '1' MINUTE", pos(b, node), code="E102")


def duration_text(secs: float) -> str:
    return str(Duration(secs))


_FLINK_UNITS = {"ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60,
                "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def flink_duration(text: str) -> float | None:
    """Seconds of a Flink duration option ('10 min', '30 s', '1 h', '500 ms'; a bare number is milliseconds)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if m is None:
        return None
    unit = m.group(2).lower()
    unit = unit if unit in _FLINK_UNITS or not unit.endswith("s") else unit[:-1]
    if not unit:
        return float(m.group(1)) / 1000
    return float(m.group(1)) * _FLINK_UNITS[unit] if unit in _FLINK_UNITS else None


def signed_seconds(b: Any, node: exp.Expression) -> float:
    """An offset's seconds: `INTERVAL '-1' MINUTE` and `-INTERVAL '1' MINUTE` are negative."""
    if isinstance(node, exp.Neg):
        return -signed_seconds(b, node.this)
    if isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal) and str(node.this.this).startswith("-"):
        copy = node.copy()
        copy.this.set("this", str(node.this.this)[1:])
        return -seconds(b, copy)
    return seconds(b, node)
