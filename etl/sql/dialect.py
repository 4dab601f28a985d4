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
