r"""etl's SQL dialect: Spark SQL plus the Flink / Blink / rsqldb forms a streaming script uses.

Built on sqlglot's Spark dialect (expressions in the generated spec are Spark SQL).
Additions:

* window functions take a table argument, as Flink's window table functions do:
  `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))`; the `TABLE t`
  argument parses into `exp.Table`;
* `DESCRIPTOR(ts)` stays an anonymous function (the front-end reads its column);
* Flink's lexical rules, not Spark's: in a string literal a backslash is an ordinary character
  (`'\S+'` is three characters) and `''` is one quote; `U&'\0041'` (`\XXXX`, `\+XXXXXX`, `UESCAPE '!'`)
  is a Unicode string; `/* */` comments do not nest; no Spark raw strings (`r'...'`) nor typed numbers (`10L`). Spark SQL generated
  from the tree escapes each literal for Spark's own rules, so the value reaching Spark is the same.

Statement-level forms (CREATE TABLE with WATERMARK / METADATA / header columns,
EMIT, CREATE FUNCTION ... LANGUAGE PYTHON) are read from the token stream by
etl.sql.script and etl.sql.ddl; only queries and expressions go through the parser.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from etl.sql.flink_functions import unsupported as flink_unsupported
from etl.sql.function_table import names as function_names

WINDOW_FUNCS = ("TUMBLE", "HOP", "SESSION", "CUMULATE")


def _window_args(name: str):
    return lambda self: _parse_window_args(self, name)


def _parse_window_args(self, name: str) -> exp.Expression:
    """Arguments of TUMBLE/HOP/SESSION: expressions, or `TABLE name` (window table function)."""
    args: list[exp.Expression] = []
    while not self._curr or self._curr.token_type != TokenType.R_PAREN:
        if self._match(TokenType.TABLE):
            table = self._parse_table_parts()
            args.append(table)
        else:
            arg = self._parse_lambda() if hasattr(self, "_parse_lambda") else self._parse_expression()
            if arg is None:
                self.raise_error("expected a window argument")
                break
            args.append(arg)
        if not self._match(TokenType.COMMA):
            break
    return exp.Anonymous(this=name, expressions=args)


def unicode_string(text: str, escape: str = "\\") -> str:
    """The value of Flink's `U&'text' [UESCAPE 'c']`: `cXXXX` and `c+XXXXXX` are code points, `cc` is c."""
    if len(escape) != 1 or escape in "+'\"\t\n\r " or escape in "0123456789abcdefABCDEF":
        raise ValueError(f"invalid UESCAPE character {escape!r}")
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != escape:
            out.append(ch)
            i += 1
            continue
        if text.startswith(escape, i + 1):
            out.append(escape)
            i += 2
            continue
        m = re.compile(re.escape(escape) + r"(?:([0-9A-Fa-f]{4})|\+([0-9A-Fa-f]{6}))").match(text, i)
        if m is None:
            raise ValueError(f"invalid Unicode escape at {text[i:i + 8]!r}: write {escape}XXXX or {escape}+XXXXXX")
        code = int(m.group(1) or m.group(2), 16)
        if code > 0x10FFFF:
            raise ValueError(f"invalid Unicode code point {code:X}")
        out.append(chr(code))
        i = m.end()
    return "".join(out)


def _parse_unicode(self, token) -> exp.Expression:
    esc = self._parse_string() if self._match_text_seq("UESCAPE") else None
    try:
        value = unicode_string(token.text, esc.name if esc is not None else "\\")
    except ValueError as e:
        self.raise_error(str(e), token)
        value = token.text
    return self.expression(exp.Literal(this=value, is_string=True), token)


def _plain(name: str):
    return lambda args: exp.Anonymous(this=name, expressions=args)


class Etl(Spark):
    IDENTIFIERS_CAN_START_WITH_DIGIT = False  # Flink: `10L` is the number 10 named L

    class Tokenizer(Spark.Tokenizer):
        KEYWORDS = {k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if k != "SESSION"}  # SESSION(ts, gap)
        STRING_ESCAPES = ["'"]  # Flink: '' is a quote, a backslash is itself
        RAW_STRINGS = []  # type: ignore[var-annotated]  # Flink has no r'...' strings
        UNICODE_STRINGS = [("U&'", "'"), ("u&'", "'")]
        NESTED_COMMENTS = False
        NUMERIC_LITERALS = {}  # type: ignore[var-annotated]  # Flink has no 10L / 1.5D / 2BD

    class Parser(Spark.Parser):  # type: ignore[valid-type,misc]  # a class attribute mypy cannot follow
        FUNCTION_PARSERS = {
            **Spark.Parser.FUNCTION_PARSERS,
            **{name: _window_args(name) for name in WINDOW_FUNCS},
        }
        PRIMARY_PARSERS = {**Spark.Parser.PRIMARY_PARSERS, TokenType.UNICODE_STRING: _parse_unicode}
        FUNCTIONS = {**Spark.Parser.FUNCTIONS,  # the peer's functions as plain calls: etl.sql.functions maps them
                     **{name: _plain(name) for name in function_names() | set(flink_unsupported())
                        if name not in Spark.Parser.FUNCTION_PARSERS}}


DIALECT = Etl()


_OPEN = ("L_PAREN", "L_BRACKET", "L_BRACE", "CASE")
_CLOSE = ("R_PAREN", "R_BRACKET", "R_BRACE", "END")
_SEP = ("AND", "OR", "COMMA", "WHEN", "THEN", "ELSE", "SELECT", "FROM", "WHERE", "HAVING", "ON", "SEMICOLON")
_OPERAND_END = ("VAR", "IDENTIFIER", "NUMBER", "STRING", "NULL", "TRUE", "FALSE", "STAR") + _CLOSE


def too_deep(tokens: list) -> Any:
    """The first sqlglot token that nests deeper than etl's limit (etl.load.nesting), or None."""
    from etl.load import nesting as N

    def kinds():
        prev = None
        for tok in tokens:
            name = tok.token_type.name
            if name in _OPEN:
                kind = N.OPEN
            elif name in _CLOSE:
                kind = N.CLOSE
            elif name in _SEP:
                kind = N.SEP
            elif name in ("NOT", "TILDE") or (name in ("DASH", "PLUS") and prev not in _OPERAND_END):
                kind = N.UNARY
            else:
                kind = N.OTHER
            prev = name
            yield kind, tok

    return N.too_deep(kinds())
