"""etl's SQL dialect: Spark SQL plus the Flink / Blink / rsqldb forms a streaming script uses.

Built on sqlglot's Spark dialect (expressions in the generated spec are Spark SQL).
Additions:

* window functions take a table argument, as Flink's window table functions do:
  `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))`; the `TABLE t`
  argument parses into `exp.Table`;
* `DESCRIPTOR(ts)` stays an anonymous function (the front-end reads its column).

Statement-level forms (CREATE TABLE with WATERMARK / METADATA / header columns,
EMIT, CREATE FUNCTION ... LANGUAGE PYTHON) are read from the token stream by
etl.sql.script and etl.sql.ddl; only queries and expressions go through the parser.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

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


class Etl(Spark):
    class Tokenizer(Spark.Tokenizer):
        KEYWORDS = {k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if k != "SESSION"}  # SESSION(ts, gap)

    class Parser(Spark.Parser):  # type: ignore[valid-type,misc]  # a class attribute mypy cannot follow
        FUNCTION_PARSERS = {
            **Spark.Parser.FUNCTION_PARSERS,
            **{name: _window_args(name) for name in WINDOW_FUNCS},
        }


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
