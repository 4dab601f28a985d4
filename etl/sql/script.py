"""A SQL script as statements: tokenize once (sqlglot, etl dialect), split on `;`, classify.

Every token keeps its absolute offset, so every position reported later is a
`file:line:col` in the script (after templating, which keeps line numbers).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from etl.diagnostics import Report, Span


class SqlSyntax(Exception):
    """A syntax problem at a position (turned into one E010 diagnostic by the caller)."""

    def __init__(self, message: str, span: Span, hint: str | None = None, code: str = "E010"):
        super().__init__(message)
        self.message, self.span, self.hint, self.code = message, span, hint, code


class Script:
    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        self._starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def span(self, offset: int) -> Span:
        line = bisect.bisect_right(self._starts, max(offset, 0)) - 1
        return Span(self.file, line + 1, offset - self._starts[line] + 1)

    def at(self, tok: Any) -> Span:
        return self.span(tok.start)

    def slice(self, first: Any, last: Any) -> str:
        return self.text[first.start:last.end + 1]


@dataclass
class Statement:
    kind: str  # table, view, insert, function, set, other
    tokens: list  # without the closing `;`

    @property
    def first(self) -> Any:
        return self.tokens[0]


def tokenize(script: Script) -> list:
    from sqlglot.errors import TokenError

    from etl.sql.dialect import DIALECT

    unclosed = _unclosed(script.text)
    if unclosed is not None:
        what, at = unclosed
        raise SqlSyntax(f"unterminated {what}", script.span(at), "close it on the same statement")
    try:
        return DIALECT.tokenize(script.text)
    except TokenError as e:
        msg = str(e).splitlines()[0] if str(e) else "cannot read the script"
        raise SqlSyntax(f"cannot read the script: {msg}", Span(script.file, 1, 1)) from None


_CLOSE = {"'": "string", '"': "quoted name", "`": "quoted name"}


def _unclosed(text: str) -> tuple[str, int] | None:
    """(what, offset of its opening) of a string, quoted name or /* comment that never closes."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
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
                if text[j] == "\\" and ch != "`":
                    j += 2
                    continue
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
                out.append(Statement(_kind(cur), cur))
            cur = []
            continue
        cur.append(tok)
    if cur:
        out.append(Statement(_kind(cur), cur))
    return out


def _kind(toks: list) -> str:
    words = [t.text.upper() for t in toks[:6]]
    if words[0] == "CREATE":
        rest = [w for w in words[1:] if w not in ("OR", "REPLACE", "TEMPORARY", "TEMP", "IF", "NOT", "EXISTS")]
        nxt = rest[0] if rest else ""
        return {"TABLE": "table", "VIEW": "view", "FUNCTION": "function"}.get(nxt, "other")
    if words[0] == "INSERT":
        return "insert"
    if words[0] == "SET":
        return "set"
    return "other"


def report_syntax(report: Report, e: SqlSyntax) -> None:
    report.error(e.code, e.message, e.span, e.hint)
