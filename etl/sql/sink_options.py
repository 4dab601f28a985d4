"""Flink's and Blink's sink buffering, flush and retry keys of WITH (...) -> the sink spec's own settings.

Every sink spec has `batch_size` (rows per write call), `flush_interval`, `max_buffer` (bytes buffered
before a flush) and `retry` (`max_attempts`, `initial_backoff`, exponential up to `max_backoff`):

| key (any sink) | spec | value |
|---|---|---|
| sink.buffer-flush.max-rows (JDBC), sink.bulk-flush.max-actions (Elasticsearch), batchSize (Blink) | batch_size | rows; '0' (no count flush) 10,000,000, the most |
| sink.buffer-flush.interval, sink.bulk-flush.interval, flushIntervalMs / flushInterval (Blink) | flush_interval | Flink duration ('1s', '500 ms', '2 min'; a bare number is ms); '0' (no timed flush) 365d |
| sink.buffer-flush.max-size, sink.bulk-flush.max-size | max_buffer | Flink memory size ('2mb' = 2 MiB, Flink's units are binary; a bare number is bytes); '0' 1PiB |
| sink.max-retries, sink.bulk-flush.backoff.max-retries, maxRetryTimes (Blink) | retry.max_attempts | retries + 1 |
| sink.bulk-flush.backoff.delay | retry.initial_backoff | Flink duration |

A value that is not one is E102 at the value; two keys for one setting (`batch_size` itself included) E104.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable

from etl.spec.base import MAX_DURATION_S, MAX_SIZE, Duration, Size
from etl.sql.intervals import flink_duration

MAX_ROWS = 10_000_000  # SinkBase.batch_size's bound
MAX_ATTEMPTS = 1000  # Retry.max_attempts's bound

_SIZE_UNITS = {"b": 1, "bytes": 1, "k": 1024, "kb": 1024, "kibibytes": 1024, "m": 1024**2, "mb": 1024**2,
               "mebibytes": 1024**2, "g": 1024**3, "gb": 1024**3, "gibibytes": 1024**3, "t": 1024**4,
               "tb": 1024**4, "tebibytes": 1024**4}
_NUMBER = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)


class BadValue(ValueError):
    """A value the key does not take: the message, and a hint."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


def _rows(text: str) -> int:
    m = _NUMBER.match(text)
    if m is None or m.group(2):
        raise BadValue(f"'{text}' is not a number of rows", "a whole number, e.g. '500' ('0': no count flush)")
    n = int(m.group(1))
    if n > MAX_ROWS:
        raise BadValue(f"{n} rows is more than etl's batch_size takes", f"at most {MAX_ROWS:,}")
    return n or MAX_ROWS


def _duration(text: str, zero: float | None) -> str:
    secs = flink_duration(text) if _NUMBER.match(text) else None  # a whole number here, as Flink's sink options
    if secs is None:
        raise BadValue(f"'{text}' is not a duration", "a number and a unit: '1s', '500 ms', '2 min' (a bare number "
                                                      "is milliseconds)")
    if secs == 0 and zero is not None:
        return str(Duration(zero))
    if secs > MAX_DURATION_S:
        raise BadValue(f"'{text}' is longer than etl takes", "at most 365 days")
    return str(Duration(secs))


def _size(text: str) -> str:
    m = _NUMBER.match(text)
    scale = _SIZE_UNITS.get((m.group(2) or "b").lower()) if m else None
    if m is None or scale is None:
        raise BadValue(f"'{text}' is not a memory size", "a number and a unit: '2mb', '512kb', '1gb' (binary "
                                                         "units, as Flink's; a bare number is bytes)")
    n = int(m.group(1)) * scale
    if n > MAX_SIZE:
        raise BadValue(f"'{text}' is larger than etl takes", "at most 1PiB")
    return str(Size(n or MAX_SIZE))


def _retries(text: str) -> int:
    m = _NUMBER.match(text)
    if m is None or m.group(2):
        raise BadValue(f"'{text}' is not a number of retries", "a whole number, e.g. '3'")
    if int(m.group(1)) >= MAX_ATTEMPTS:
        raise BadValue(f"{m.group(1)} retries is more than etl takes", f"at most {MAX_ATTEMPTS - 1}")
    return int(m.group(1)) + 1


Convert = Callable[[str], Any]
_ROWS = ("batch_size", _rows)
_INTERVAL = ("flush_interval", lambda v: _duration(v, MAX_DURATION_S))
_BYTES = ("max_buffer", _size)
_ATTEMPTS = ("retry.max_attempts", _retries)
KEYS: dict[str, tuple[str, Convert]] = {
    "sink.buffer-flush.max-rows": _ROWS, "sink.bulk-flush.max-actions": _ROWS, "batchsize": _ROWS,
    "sink.buffer-flush.interval": _INTERVAL, "sink.bulk-flush.interval": _INTERVAL, "flushinterval": _INTERVAL,
    "flushintervalms": _INTERVAL,
    "sink.buffer-flush.max-size": _BYTES, "sink.bulk-flush.max-size": _BYTES,
    "sink.max-retries": _ATTEMPTS, "sink.bulk-flush.backoff.max-retries": _ATTEMPTS, "maxretrytimes": _ATTEMPTS,
    "sink.bulk-flush.backoff.delay": ("retry.initial_backoff", lambda v: _duration(v, None)),
}
SPELLED = ("sink.buffer-flush.max-rows", "sink.bulk-flush.max-actions", "batchSize", "sink.buffer-flush.interval",
           "sink.bulk-flush.interval", "flushIntervalMs", "flushInterval", "sink.buffer-flush.max-size",
           "sink.bulk-flush.max-size", "sink.max-retries", "sink.bulk-flush.backoff.max-retries", "maxRetryTimes",
           "sink.bulk-flush.backoff.delay")  # as did-you-mean offers them


def sink_settings(o: Any, m: Any) -> None:
    """Map the WITH keys above of a sink (`o`: connectors.Opts) onto `m`'s spec (connectors.Mapped)."""
    o.known.update(SPELLED)
    given: dict[str, Any] = {}  # spec setting -> the option that set it
    for key, opt in list(o.by.items()):
        own = key in ("batch_size", "flush_interval", "max_buffer")  # etl's own name: passed through (map_table)
        if key not in KEYS and not own:
            continue
        setting = key if own else KEYS[key][0]
        first = given.setdefault(setting, opt)
        if first is not opt:
            o.report.error("E104", f"'{opt.key}' and '{first.key}' both set the sink's {setting}", opt.key_span,
                           f"keep one of them in WITH (...) of table '{o.table.name}'")
            o.used.add(key)
            continue
        if own:
            continue
        o.used.add(key)
        try:
            value = KEYS[key][1](str(opt.value))
        except BadValue as e:
            o.report.error("E102", f"invalid {opt.key}: {e}", opt.value_span, e.hint)
            continue
        if setting.startswith("retry."):
            m.spec.setdefault("retry", {})[setting.split(".", 1)[1]] = value
            m.spans["retry"] = (opt.key_span, opt.value_span)
        else:
            o.put(m, setting, value, opt)
