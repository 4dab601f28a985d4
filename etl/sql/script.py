"""A SQL script as statements: tokenize once (sqlglot, etl dialect), split on `;`, classify.

Every token keeps its absolute offset, so every position reported later is a
`file:line:col` in the script (after templating, which keeps line numbers).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from etl.diagnostics import Report, Span
from etl.sql.dialect import DIALECT


class SqlSyntax(Exception):
    """A syntax problem at a position (turned into one E010 diagnostic by the caller)."""

    def __init__(self, message: str, span: Span, hint: str | None = None, code: str = "E010"):
        super().__init__(message)
        self.message, self.span, self.hint, self.code = message, span, hint, code
        self.more: list[SqlSyntax] = []  # the statement's other problems (reported with it)


class Script:
    """The (rendered) script text; `lines[i]` is the line of the file that line i + 1 of the text came from."""

    def __init__(self, text: str, file: str, lines: list[int] | None = None):
        self.text = text
        self.file = file
        self._starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        self.lines = lines

    def span(self, offset: int) -> Span:
        line = bisect.bisect_right(self._starts, max(offset, 0)) - 1
        src = self.lines[line] if self.lines is not None and line < len(self.lines) else line + 1
        return Span(self.file, src, offset - self._starts[line] + 1)

    def at(self, tok: Any) -> Span:
        return self.span(tok.start)

    def slice(self, first: Any, last: Any) -> str:
        return self.text[first.start:last.end + 1]


@dataclass
class Statement:
    kind: str  # table, view, insert, function, set, select (a bare query), other
    tokens: list  # without the closing `;`
    explain: bool = False  # EXPLAIN <statement>: checked, not part of the pipeline (etl.sql.statements)

    @property
    def first(self) -> Any:
        return self.tokens[0]


def tokenize(script: Script) -> list:
    from sqlglot.errors import TokenError

    unclosed = _unclosed(script.text)
    if unclosed is not None:
        what, at = unclosed
        raise SqlSyntax(f"unterminated {what}", script.span(at), "close it on the same statement")
    try:
        return _commands(script, DIALECT.tokenize(script.text))
    except TokenError as e:
        msg = str(e).splitlines()[0] if str(e) else "cannot read the script"
        raise SqlSyntax(f"cannot read the script: {msg}", Span(script.file, 1, 1)) from None


def _commands(script: Script, tokens: list) -> list:
    """sqlglot reads the rest of an EXPLAIN or EXECUTE statement as one string: tokens again (etl.sql.statements
    reads them), each at its offset in the script."""
    out: list = []
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i else None
        if prev is not None and prev.text.upper() in ("EXPLAIN", "EXECUTE") and tok.token_type.name == "STRING" \
                and script.text[prev.end + 1:tok.end + 1].strip() == tok.text.strip():
            base = prev.end + 1
            for sub in DIALECT.tokenize(script.text[base:tok.end + 1]):
                sub.start, sub.end = sub.start + base, sub.end + base
                out.append(sub)
            continue
        out.append(tok)
    return out


_CLOSE = {"'": "string", '"': "quoted name", "`": "quoted name"}
_LINE_END = re.compile(r"[\r\n]")  # only these end a `--` comment (Flink's lexer; not U+2028 or U+0085)


def _unclosed(text: str) -> tuple[str, int] | None:
    """(what, offset of its opening) of a string, quoted name or /* comment that never closes (Flink's rules:
    a doubled quote is the quote, a backslash is an ordinary character, comments do not nest)."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "-" and text.startswith("--", i):
            m = _LINE_END.search(text, i)
            i = n if m is None else m.end()
        elif ch == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                return "/* comment", i
            i = j + 2
        elif ch in _CLOSE:
            j = i + 1
            while True:
                if j >= n:
                    return _CLOSE[ch], i
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:  # doubled quote
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
        else:
            i += 1
    return None


def split(tokens: list) -> list[Statement]:
    from sqlglot.tokens import TokenType as T

    out: list[Statement] = []
    cur: list = []
    depth = 0
    for tok in tokens:
        if tok.token_type in (T.L_PAREN,):
            depth += 1
        elif tok.token_type == T.R_PAREN:
            depth = max(0, depth - 1)
        if tok.token_type == T.SEMICOLON and depth == 0:
            if cur:
                out.append(Statement(statement_kind(cur), cur))
            cur = []
            continue
        cur.append(tok)
    if cur:
        out.append(Statement(statement_kind(cur), cur))
    return out


def statement_kind(toks: list) -> str:
    words = [t.text.upper() for t in toks[:6]]
    if words[0] == "CREATE":
        rest = [w for w in words[1:] if w not in ("OR", "REPLACE", "TEMPORARY", "TEMP", "SYSTEM", "IF", "NOT", "EXISTS")]
        nxt = rest[0] if rest else ""
        return {"TABLE": "table", "VIEW": "view", "FUNCTION": "function"}.get(nxt, "other")
    if words[0] == "INSERT":
        return "insert"
    if words[0] == "SET":
        return "set"
    return "other"


# Trojan Source (CVE-2021-42574): bidirectional controls reorder what an editor shows, so a comment or a
# string can hide code; a line or paragraph separator looks like a line break but does not end a `--` comment.
_BIDI = {"\u202a": "LRE", "\u202b": "RLE", "\u202c": "PDF", "\u202d": "LRO", "\u202e": "RLO", "\u2066": "LRI",
         "\u2067": "RLI", "\u2068": "FSI", "\u2069": "PDI", "\u200e": "LRM", "\u200f": "RLM", "\u061c": "ALM"}
_SEPARATORS = {"\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR", "\u0085": "NEXT LINE"}
_INVISIBLE = re.compile("[" + "".join(_BIDI) + "".join(_SEPARATORS) + "]")


def invisible_characters(script: Script, report: Report) -> None:
    """W014 at each bidirectional control character and each line separator that is not a line feed."""
    for m in _INVISIBLE.finditer(script.text):
        ch = m.group()
        code = f"U+{ord(ch):04X}"
        if ch in _BIDI:
            report.warning("W014", f"bidirectional control character {code} ({_BIDI[ch]}): the script may read "
                           "differently from what an editor shows", script.span(m.start()),
                           "remove it; write it in a string as U&'\\" + f"{ord(ch):04X}' if the data needs it")
        else:
            report.warning("W014", f"{code} ({_SEPARATORS[ch]}) is not a line break in SQL: inside a `--` comment "
                           "the text after it, up to the next line feed, is comment too", script.span(m.start()),
                           "use a plain line feed")


def report_syntax(report: Report, e: SqlSyntax) -> None:
    for x in (e, *e.more):
        report.error(x.code, x.message, x.span, x.hint)


# Line numbers through templating: before rendering, each line outside a template tag gets a marker at its
# end naming its line; after rendering, the markers say where each output line came from (a `{% if %}`
# that drops lines, a `{% for %}` that repeats them), and are removed.
_MARK = "\x1e"
_MARK_RE = re.compile(_MARK + r"L(\d+)" + _MARK)
_TAG_RE = re.compile(r"\{\{|\{%|\{#|\}\}|%\}|#\}")


def mark_lines(text: str) -> str:
    out, inside = [], False
    for i, line in enumerate(text.split("\n"), 1):
        for m in _TAG_RE.finditer(line):
            inside = m.group()[0] == "{"
        out.append(line if inside else f"{line}{_MARK}L{i}{_MARK}")
    return "\n".join(out)


def unmark_lines(text: str) -> tuple[str, list[int]]:
    lines, out, prev = [], [], 0
    for line in text.split("\n"):
        m = _MARK_RE.search(line)
        prev = int(m.group(1)) if m else prev + 1
        lines.append(prev)
        out.append(_MARK_RE.sub("", line))
    return "\n".join(out), lines
