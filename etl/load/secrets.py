"""Values that came from the environment, and the one function that hides them in every output.

The loader registers every value a template read with `env()` (also when the file
then fails to render or parse); every printer (validate, explain, run, test, the
log record factory) passes its text through `redact`.

The rule (README, Templating):
- a value of at least MIN_TEXT characters is hidden wherever its text appears, in any
  letter case, escaped for JSON, Python repr, YAML or URLs, and cut short (a prefix of
  at least MIN_TEXT characters followed by `...`, `…` or the end of a quoted string);
- the password of a URL (`scheme://user:password@host`) is hidden wherever it came from;
- a shorter value (one to three characters) could be any word: it is hidden only where
  it stands as a whole value: between quotes ('x', "x", `x`), after `=` (up to a space, `&`,
  `;` or `,`), or as the last word of a line (`name: x`, `pipeline x`), so that a
  one-character secret never garbles a message.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
MIN_TEXT = 4

_lock = threading.Lock()
_values: set[str] = set()
_pattern: re.Pattern[str] | None = None


def _variants(value: str) -> set[str]:
    forms = {value, json.dumps(value)[1:-1], repr(value)[1:-1], quote(value, safe=""), quote(value),
             quote_plus(value), value.encode("unicode_escape").decode("ascii"),
             json.dumps(value, ensure_ascii=False)[1:-1]}
    return {f for f in forms if f}


def _build(values: Iterable[str]) -> re.Pattern[str] | None:
    long_alts: list[str] = []
    cut_alts: list[str] = []
    short_alts: list[str] = []
    for v in values:
        if len(v) >= MIN_TEXT:
            for form in _variants(v):
                long_alts.append(re.escape(form))
                # cut short: a prefix of MIN_TEXT or more characters, then an ellipsis or a closing quote
                cut_alts.extend(re.escape(form[:n]) for n in range(MIN_TEXT, min(len(form), 256)))
        else:
            short_alts.extend(re.escape(f) for f in _variants(v))
    parts: list[str] = []
    if long_alts:
        parts.append("(?:" + "|".join(sorted(set(long_alts), key=len, reverse=True)) + ")")
    if cut_alts:
        parts.append("(?:" + "|".join(sorted(set(cut_alts), key=len, reverse=True)) + r")(?=\.\.\.|…|['\"`])")
    if short_alts:
        alts = "|".join(sorted(set(short_alts), key=len, reverse=True))
        parts.append(rf"(?<=['\"`])(?:{alts})(?=['\"`])")
        parts.append(rf"(?<=\s)(?:{alts})(?=[ \t]*$)")
        parts.append(rf"(?<==)(?:{alts})(?=[\s&;,]|$)")
    if not parts:
        return None
    return re.compile("|".join(parts), re.IGNORECASE | re.MULTILINE)


def register(values: Iterable[str]) -> None:
    """Remember values read from the environment (empty ones are nothing to hide)."""
    global _pattern
    new = {v for v in values if isinstance(v, str) and v.strip()}
    with _lock:
        if new <= _values:
            return
        _values.update(new)
        _pattern = _build(_values)
    install_log_redaction()


def registered() -> frozenset[str]:
    return frozenset(_values)


def clear() -> None:
    """Forget every value (tests)."""
    global _pattern
    with _lock:
        _values.clear()
        _pattern = None


# the password of a URL (`scheme://user:password@host`), wherever it came from
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*:)[^\s/@'\"]+@")


def redact(text: str | None) -> str | None:
    """`text` with every registered value (in any of its forms), and every URL's password, shown as ***."""
    if not text:
        return text
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", text)
    pattern = _pattern
    return text if pattern is None else pattern.sub(MASK, text)


_installed = False


def install_log_redaction() -> None:
    """Redact the message (with its arguments and exception text) of every log record, whichever
    logger or handler prints it: the record factory is the one place all records pass."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _pattern is None:
            return record
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: logging reports it itself
            return record
        record.msg, record.args = redact(message), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
