"""Values that came from the environment, and the one function that hides them in every output.

The loader registers every value a template read with `env()` (also when the file
then fails to render or parse); every output passes its text through `redact`: the
`etl` command's stdout and stderr (RedactingStream: whatever a command prints),
the CLI's printers (validate, explain, run, test, tap, top, to-yaml), explain's line
wrapping (before it wraps), the log record factory, the control endpoint's response
bodies (/metrics, /status, /tap), the run file, and dead-letter reasons (`java_replacements`:
the same patterns for Spark's regexp_replace).

The rule (docs/templating.md):
- a value of at least MIN_TEXT characters is hidden wherever its text appears, in any
  letter case, and in every escaped form etl or a peer prints: each character may be
  preceded by backslashes (Python `re.escape`, Hyperscan/Java regex escapes, JSON, Java
  and SQL string escaping, and these escaped again) and written as itself, `%XX` (URL),
  `\\xXX`, `\\x{X}`, `\\uXXXX` (JSON, Java, Python), a doubled quote (SQL `''`), `.` for `_`
  and `.*` for `%` (a SQL LIKE pattern as its regex shows it), and a space as any run of
  white space (a line wrapped inside it) or `+`; also the value cut short (a prefix of at
  least MIN_TEXT characters followed by `...`, `…` or a quote), and its base64 at any
  offset after `Basic ` (HTTP basic authentication, which etl's Elasticsearch sink encodes);
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
from dataclasses import dataclass
from typing import Any, overload
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
MIN_TEXT = 4
MAX_CUT = 256  # a value cut short is recognised up to this many characters

_lock = threading.Lock()
_values: set[str] = set()
_matcher: _Matcher | None = None


def _variants(value: str) -> set[str]:
    forms = {value, json.dumps(value)[1:-1], repr(value)[1:-1], quote(value, safe=""), quote(value),
             quote_plus(value), value.encode("unicode_escape").decode("ascii"),
             json.dumps(value, ensure_ascii=False)[1:-1]}
    return {f for f in forms if f}


_WILDCARDS = {"_": r"\.", "%": r"\.\*(?:\?)?"}
_CONTROL = {"\n": "n", "\r": "r", "\t": "t", "\f": "f", "\b": "b", "\v": "v", "\0": "0"}


def _lit(text: str) -> str:
    """`text` as the case-folded text the patterns of long values search (`_Matcher.sub`: `re` finds a literal
    start far faster than a class or a case-insensitive one, and redaction runs over every output). A character
    that folds to several (ß: ss) may also stand as itself (the case-insensitive search of a text whose folding
    changed its length)."""
    out = []
    for ch in text:
        folded = ch.casefold()
        out.append(re.escape(folded) if len(folded) == 1 else f"(?:{re.escape(folded)}|{re.escape(ch.lower())})")
    return "".join(out)


def _char(c: str, first: bool = False) -> str:
    """Every form of one character of a value, lower-cased: an ASCII letter or digit as itself; another character
    as an escape of it after one or more backslashes, or as itself, its URL encoding ... after any number of
    backslashes (none before the first character of a value: a backslash is then part of an escape)."""
    if c.isascii() and c.isalnum():
        return _lit(c)  # no escaping etl or a peer does touches ASCII letters and digits
    cp = ord(c)
    escapes = [rf"x\{{0*{cp:x}\}}"]  # Hyperscan, java.util.regex: \x{2b}
    if cp < 0x100:
        escapes.append(f"x{cp:02x}")
    if cp < 0x10000:
        escapes.append(f"u{cp:04x}")  # JSON, Java, Python
    else:
        hi, lo = divmod(cp - 0x10000, 0x400)
        escapes += [f"u{cp:08x}", rf"u{0xD800 + hi:04x}\\u{0xDC00 + lo:04x}"]  # (\U0001f600 lower-cased)
    if c in _CONTROL:
        escapes.append(_CONTROL[c])  # \n, \t ...
    plain = ["".join(f"%{b:02x}" for b in c.encode("utf-8"))]
    if c.isspace():
        plain += [r"\s+", r"\+"]  # a line wrapped inside the value; quote_plus
    if c in "'\"":
        plain.append(c + c)  # SQL, CSV, YAML single quotes
    if c in _WILDCARDS:
        plain.append(_WILDCARDS[c])  # SQL LIKE's wildcards as the regex of the pattern shows them
    plain.append(_lit(c))  # last: where a longer form matches too (`%25` for `%`), the longer one is hidden
    if first:
        return r"(?:\\+(?:" + "|".join(escapes + plain) + ")|" + "|".join(plain) + ")"
    return r"\\*(?:\\(?:" + "|".join(escapes) + ")|" + "|".join(plain) + ")"


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


def _long(value: str) -> str:
    """The pattern of a value of MIN_TEXT characters or more in every form: whole, or cut short (its first
    MIN_TEXT characters or more, then an ellipsis or a closing quote). The first characters come first, shared by
    both: `re` then searches a value starting with letters or digits by that literal prefix."""
    chars = [_char(c, i == 0) for i, c in enumerate(value)]
    tail = ""
    for c in reversed(chars[MIN_TEXT:MAX_CUT]):
        tail = f"(?:{c}{tail})?"
    rest = "".join(chars[MIN_TEXT:])
    if not rest:
        return "".join(chars)
    return "".join(chars[:MIN_TEXT]) + f"(?:{rest}|{tail}{_CUT})"


_WORD = re.compile(r"[A-Za-z0-9]+")
_CUT = r"(?=\.\.\.|…|['\"`])"  # a value cut short: followed by an ellipsis or a closing quote


@dataclass(frozen=True)
class _Long:
    """A value of MIN_TEXT characters or more: its pattern (every form, cut short too), and the lower-case ASCII
    word every form of it holds (no escaping touches letters and digits, and a value cut short keeps its first
    MIN_TEXT characters): the longest word of its first MIN_TEXT characters. A text without it is not searched
    for the value (most texts: the redaction runs over every output). No word: always searched."""

    lower: re.Pattern[str]  # over the case-folded text
    caseless: re.Pattern[str]  # over the text itself, where folding changed its length
    word: str


@dataclass(frozen=True)
class _Matcher:
    source: str  # the pattern of every value, case-insensitive: java_replacements runs it in the JVM
    longs: tuple[_Long, ...]  # longest first
    # the words of the long values in one search over the case-folded text: a text without any is not searched
    # for them. None: a long value has no word (always searched).
    gate: re.Pattern[str] | None
    # the base64 forms (case matters), looked for where etl encodes a value: HTTP basic authentication (the
    # Elasticsearch sink's `Authorization: Basic base64(user:password)`)
    pieces: tuple[str, ...]
    b64: re.Pattern[str] | None
    short: re.Pattern[str] | None  # the values under MIN_TEXT characters (over the text)

    def sub(self, text: str) -> str:
        if self.longs:
            low = text.casefold()
            if self.gate is None or self.gate.search(low) is not None:
                text = self._longs(text, low)
            if "basic " in low:
                for piece in self.pieces:
                    if piece in text:
                        text = self.b64.sub(MASK, text)  # type: ignore[union-attr]  # (pieces: b64 is set)
                        break
        return text if self.short is None else self.short.sub(MASK, text)

    def _longs(self, text: str, low: str) -> str:
        found = [v for v in self.longs if v.word in low]
        if found and len(low) == len(text):
            spans = sorted(m.span() for v in found for m in v.lower.finditer(low))
            if spans:
                pieces, at = [], 0
                for start, end in spans:  # overlapping matches (a value inside another) are one mask
                    if start < at:
                        if end > at:
                            at = end
                        continue
                    pieces.append(text[at:start] + MASK)
                    at = end
                text = "".join(pieces) + text[at:]
        else:
            for v in found:
                text = v.caseless.sub(MASK, text)
        return text


def _build(values: Iterable[str]) -> _Matcher | None:
    longs: list[_Long] = []
    sources: list[str] = []
    short_alts: list[str] = []
    b64: set[str] = set()
    for v in sorted(values, key=lambda x: (-len(x), x)):
        if len(v) >= MIN_TEXT:
            source = _long(v)
            sources.append(source)
            word = max(_WORD.findall(v[:MIN_TEXT]) or [""], key=len).lower()
            longs.append(_Long(re.compile(source), re.compile(source, re.IGNORECASE), word))
            b64 |= _base64_forms(v)
        else:
            short_alts.extend(re.escape(f) for f in _variants(v))
    pieces = [re.escape(f) for f in sorted(b64, key=lambda x: (-len(x), x))]
    shorts: list[str] = []
    if short_alts:
        alts = "|".join(sorted(set(short_alts), key=len, reverse=True))
        shorts.append(rf"(?<=['\"`])(?i:{alts})(?=['\"`])")
        shorts.append(rf"(?<=\s)(?i:{alts})(?=[ \t]*$)")
        shorts.append(rf"(?<==)(?i:{alts})(?=[\s&;,]|$)")
    if not longs and not shorts:
        return None
    words = sorted({v.word for v in longs})
    gate = re.compile("|".join(map(re.escape, words))) if longs and all(words) else None
    return _Matcher("|".join(sources + [f"(?-i:{p})" for p in pieces] + shorts), tuple(longs), gate,
                    tuple(sorted(b64, key=lambda x: (-len(x), x))), re.compile("|".join(pieces)) if pieces else None,
                    re.compile("|".join(shorts), re.MULTILINE) if shorts else None)


def register(values: Iterable[str]) -> None:
    """Remember values read from the environment (empty ones are nothing to hide)."""
    global _matcher
    new = {v for v in values if isinstance(v, str) and v.strip()}
    with _lock:
        if new <= _values:
            return
        _values.update(new)
        _matcher = _build(_values)
    install_log_redaction()


def registered() -> frozenset[str]:
    return frozenset(_values)


def clear() -> None:
    """Forget every value (tests)."""
    global _matcher
    with _lock:
        _values.clear()
        _matcher = None


# the password of a URL (`scheme://user:password@host`), wherever it came from
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*:)[^\s/@'\"]+@")


def java_replacements() -> list[tuple[str, str]]:
    """`redact` as (java.util.regex pattern, replacement) pairs, applied in order, for text that never reaches
    Python: Spark's regexp_replace over dead-letter reasons (Spark's own error messages built on the executors)."""
    pairs = [(_URL_PASSWORD.pattern, "$1" + MASK + "@")]
    matcher = _matcher
    if matcher is not None:
        pairs.append(("(?imu)" + matcher.source, MASK))
    return pairs


@overload
def redact(text: str) -> str: ...
@overload
def redact(text: None) -> None: ...
def redact(text: str | None) -> str | None:
    """`text` with every registered value (in any of its forms), and every URL's password, shown as ***."""
    if not text:
        return text
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", text)
    matcher = _matcher
    return text if matcher is None else matcher.sub(text)


class RedactingStream:
    """A text stream whose writes pass `redact`: the `etl` command's stdout and stderr (etl.cli.main), so that
    whatever a command prints (typer.echo, print, rich, a log handler on the console) is redacted, also in a
    command that does not ask for it. Anything else is the wrapped stream's."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: Any) -> Any:
        return self._stream.write(redact(text) if isinstance(text, str) else text)

    def writelines(self, lines: Iterable[Any]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def redact_console() -> None:
    """Wrap sys.stdout and sys.stderr in RedactingStream (once)."""
    import sys

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))


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
        if _matcher is None:
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
