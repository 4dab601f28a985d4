"""Values that came from the environment, and the one function that hides them in every output.

The loader registers every value a template read with `env()` (also when the file
then fails to render or parse); every output passes its text through `redact`: the
CLI's printers (validate, explain, run, test, tap, top, to-yaml), explain's line
wrapping (before it wraps), the log record factory, the control endpoint's response
bodies (/metrics, /status, /tap), the run file, and dead-letter reasons (`java_replacements`:
the same patterns for Spark's regexp_replace).

The rule (README, Templating):
- a value of at least MIN_TEXT characters is hidden wherever its text appears, in any
  letter case, and in every escaped form etl or a peer prints: each character may be
  preceded by backslashes (Python `re.escape`, Hyperscan/Java regex escapes, JSON, Java
  and SQL string escaping, and these escaped again) and written as itself, `%XX` (URL),
  `\\xXX`, `\\x{X}`, `\\uXXXX` (JSON, Java, Python), a doubled quote (SQL `''`), `.` for `_`
  and `.*` for `%` (a SQL LIKE pattern as its regex shows it), and a space as any run of white space (a line wrapped inside it) or `+`; also the base64 of
  the value at any offset, and the value cut short (a prefix of at least MIN_TEXT
  characters followed by `...`, `…` or a quote);
- the password of a URL (`scheme://user:password@host`) is hidden wherever it came from;
- a shorter value (one to three characters) could be any word: it is hidden only where
  it stands as a whole value: between quotes ('x', "x", `x`), after `=` (up to a space, `&`,
  `;` or `,`), or as the last word of a line (`name: x`, `pipeline x`), so that a
  one-character secret never garbles a message.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
from typing import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
MIN_TEXT = 4
MAX_CUT = 256  # a value cut short is recognised up to this many characters

_lock = threading.Lock()
_values: set[str] = set()
_pattern: re.Pattern[str] | None = None
_source: str | None = None  # the pattern's text (flags apart), for java_pattern


def _variants(value: str) -> set[str]:
    forms = {value, json.dumps(value)[1:-1], repr(value)[1:-1], quote(value, safe=""), quote(value),
             quote_plus(value), value.encode("unicode_escape").decode("ascii"),
             json.dumps(value, ensure_ascii=False)[1:-1]}
    return {f for f in forms if f}


_WILDCARDS = {"_": r"\.", "%": r"\.\*(?:\?)?"}
_CONTROL = {"\n": "n", "\r": "r", "\t": "t", "\f": "f", "\b": "b", "\v": "v", "\0": "0"}


def _char(c: str) -> str:
    """Every form of one character of a value: itself or an escape of it, after any number of backslashes."""
    cp = ord(c)
    alts = [re.escape(c), "".join("%%%02x" % b for b in c.encode("utf-8")), r"\\x\{0*%x\}" % cp]
    if cp < 0x100:
        alts.append(r"\\x%02x" % cp)
    if cp < 0x10000:
        alts.append(r"\\u%04x" % cp)
    else:
        hi, lo = divmod(cp - 0x10000, 0x400)
        alts += [r"\\U%08x" % cp, r"\\u%04x\\u%04x" % (0xD800 + hi, 0xDC00 + lo)]
    if c in _CONTROL:
        alts.append(_CONTROL[c])  # after the backslash prefix: \n, \t ...
    if c.isspace():
        alts += [r"\s+", r"\+"]  # a line wrapped inside the value; quote_plus
    if c in "'\"":
        alts.append(c + c)  # SQL, CSV, YAML single quotes
    if c in _WILDCARDS:
        alts.append(_WILDCARDS[c])  # SQL LIKE's wildcards as the regex of the pattern shows them
    return r"\\*(?:" + "|".join(alts) + ")"


def _base64_forms(value: str) -> set[str]:
    """The base64 text of `value` inside any encoded string (etl encodes `user:password` for HTTP basic auth):
    the groups made of its bytes only, at each of the three offsets it can start at."""
    raw = value.encode("utf-8")
    forms = set()
    for k in range(3):
        text = base64.b64encode(b"\0" * k + raw).decode("ascii")
        piece = text[4 * (k > 0):4 * ((k + len(raw)) // 3)]
        if len(piece) >= 2 * MIN_TEXT:
            forms.add(piece)
    return forms


def _long(value: str) -> tuple[str, str | None]:
    """(the value in every form, the value cut short in every form, or None)."""
    chars = [_char(c) for c in value[:MAX_CUT]]
    full = "".join(_char(c) for c in value)
    if len(chars) <= MIN_TEXT:
        return full, None
    tail = ""
    for c in reversed(chars[MIN_TEXT:]):
        tail = f"(?:{c}{tail})?"
    return full, "".join(chars[:MIN_TEXT]) + tail


def _build(values: Iterable[str]) -> str | None:
    full_alts: list[str] = []
    cut_alts: list[str] = []
    short_alts: list[str] = []
    b64: set[str] = set()
    for v in sorted(values, key=len, reverse=True):
        if len(v) >= MIN_TEXT:
            full, cut = _long(v)
            full_alts.append(full)
            if cut:
                cut_alts.append(cut)
            b64 |= _base64_forms(v)
        else:
            short_alts.extend(re.escape(f) for f in _variants(v))
    parts: list[str] = []
    parts.extend(full_alts)
    if b64:
        parts.extend("(?-i:" + re.escape(f) + ")" for f in sorted(b64, key=len, reverse=True))
    if cut_alts:
        parts.append("(?:" + "|".join(cut_alts) + r")(?=\.\.\.|…|['\"`])")
    if short_alts:
        alts = "|".join(sorted(set(short_alts), key=len, reverse=True))
        parts.append(rf"(?<=['\"`])(?:{alts})(?=['\"`])")
        parts.append(rf"(?<=\s)(?:{alts})(?=[ \t]*$)")
        parts.append(rf"(?<==)(?:{alts})(?=[\s&;,]|$)")
    return "|".join(parts) if parts else None


def register(values: Iterable[str]) -> None:
    """Remember values read from the environment (empty ones are nothing to hide)."""
    global _pattern, _source
    new = {v for v in values if isinstance(v, str) and v.strip()}
    with _lock:
        if new <= _values:
            return
        _values.update(new)
        _source = _build(_values)
        _pattern = None if _source is None else re.compile(_source, re.IGNORECASE | re.MULTILINE)
    install_log_redaction()


def registered() -> frozenset[str]:
    return frozenset(_values)


def clear() -> None:
    """Forget every value (tests)."""
    global _pattern, _source
    with _lock:
        _values.clear()
        _pattern = _source = None


# the password of a URL (`scheme://user:password@host`), wherever it came from
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*:)[^\s/@'\"]+@")


def java_replacements() -> list[tuple[str, str]]:
    """`redact` as (java.util.regex pattern, replacement) pairs, applied in order, for text that never reaches
    Python: Spark's regexp_replace over dead-letter reasons (Spark's own error messages built on the executors)."""
    pairs = [(_URL_PASSWORD.pattern, "$1" + MASK + "@")]
    source = _source
    if source is not None:
        pairs.append(("(?imu)" + source, MASK))
    return pairs


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
