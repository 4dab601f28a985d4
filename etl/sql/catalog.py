"""Spark's function catalogue: every built-in SQL function with the arguments it takes and its result type.

The data is etl/sql/spark_functions.tsv, written by scripts/spark_functions.py from Spark's own answers (its
analyser, probed with NULL and typed NULL arguments; see that script). No JVM here: `etl validate` reads it to tell
an unknown function (E012), a wrong number of arguments (E012), an argument type Spark refuses (E102), and the type
of a call's result (the column types of derived columns).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILE = Path(__file__).parent / "spark_functions.tsv"
_BY_CLASS = re.compile(r"\d+:")  # a result column per argument class: 1:i=$,s=double|2:...
CLASS_NAMES = {"s": "string", "i": "int", "l": "bigint", "f": "double", "n": "decimal", "b": "boolean", "d": "date",
               "t": "timestamp", "x": "binary", "a": "array", "m": "map", "r": "struct"}
_SCALARS = {"string": "s", "varchar": "s", "char": "s", "tinyint": "i", "byte": "i", "smallint": "i", "short": "i",
            "int": "i", "integer": "i", "bigint": "l", "long": "l", "double": "f", "float": "f", "real": "f",
            "decimal": "n", "dec": "n", "numeric": "n", "boolean": "b", "date": "d", "timestamp": "t",
            "timestamp_ntz": "t", "timestamp_ltz": "t", "binary": "x", "array": "a", "map": "m", "struct": "r"}


@dataclass(frozen=True)
class SparkFunction:
    name: str
    group: str  # agg, window, generator, table, or Spark's group of a scalar function (string, math, ...)
    arity: str  # "2,3" | "1+" | "2n" | "?"
    args: tuple[str, ...]  # per position: the class letters taken, "*" (any), with "=type" when text is cast
    returns: str  # a Spark type, "$1" (argument 1's type) or "" (it depends)
    # where it depends: per 1-based position whose class changes the result, class letter -> type ("$": the
    # argument's own type)
    by_class: tuple[tuple[int, dict[str, str]], ...] = ()

    def takes(self, n: int) -> bool:
        """Whether Spark takes a call with `n` arguments (True when the catalogue does not tell)."""
        if self.arity == "?":
            return True
        if self.arity == "2n":
            return n > 0 and n % 2 == 0
        return any(part.endswith("+") and n >= int(part[:-1]) or part == str(n) for part in self.arity.split(","))

    def arity_text(self) -> str:
        """'2 or 3 arguments', 'one or more arguments', 'an even number of arguments' ..."""
        if self.arity == "2n":
            return "an even number of arguments (2 or more)"
        parts = self.arity.split(",")
        words = [f"{p[:-1]} or more" if p.endswith("+") else p for p in parts]
        text = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
        return f"{text} argument{'' if text == '1' else 's'}"

    def position(self, i: int) -> str:
        """The classes argument `i` (0-based) takes ("*": any); the last position's hold for the rest of a function
        of one or more (1+) arguments."""
        if i < len(self.args):
            return self.args[i]
        return self.args[-1] if self.args and self.arity.endswith("+") else "*"

    def told(self, i: int, n: int) -> bool:
        """Whether the classes of argument `i` (0-based) hold in a call of `n` arguments: the script probed them in
        a call of the fewest arguments past `i`, and an overload further on is another signature
        (make_timestamp(date, time) and make_timestamp(year, month, day, hour, min, sec): arities 1,2,3,6)."""
        fixed = sorted(int(p) for p in self.arity.split(",") if p.isdigit())
        probed = next((k for k in fixed if k > i), None)
        if probed is None or n == probed:
            return True
        run = {probed}
        for k in fixed + [int(p[:-1]) for p in self.arity.split(",") if p.endswith("+")]:
            if k - 1 in run or k + 1 in run:
                run.add(k)
        return n in run or any(p.endswith("+") and n >= int(p[:-1]) and int(p[:-1]) in run
                               for p in self.arity.split(","))

    def refuses(self, i: int, typ: str) -> bool:
        """Whether Spark's analysis refuses a value of Spark type `typ` as argument `i` (0-based)."""
        cls = type_class(typ)
        cell = self.position(i).split("=")[0]
        return cls is not None and cell != "*" and cls not in cell

    def cast_of_text(self, i: int) -> str | None:
        """The type Spark casts text given as argument `i` to (None: it takes text as text, or not at all)."""
        cell = self.position(i)
        return cell.split("=", 1)[1] if "=" in cell else None

    def taken_text(self, i: int) -> str:
        cell = self.position(i).split("=")[0]
        return ", ".join(CLASS_NAMES[c] for c in cell if c in CLASS_NAMES)


def type_class(typ: str) -> str | None:
    """The class letter of a Spark type (None: one the catalogue does not probe, or unknown)."""
    low = typ.strip().lower()
    head = low.split("<", 1)[0].split("(", 1)[0].strip()
    return _SCALARS.get(head)


@functools.cache
def catalogue() -> dict[str, SparkFunction]:
    out = {}
    for row in _rows():
        name, group, arity, args, result = row
        told = _BY_CLASS.match(result) is not None
        out[name] = SparkFunction(name, group, arity, tuple(args.split(";")) if args != "*" else (),
                                  "" if result == "-" or told else result, _by_class(result) if told else ())
    return out


def _by_class(cell: str) -> tuple[tuple[int, dict[str, str]], ...]:
    """`1:i=$,s=double|2:...` -> ((1, {"i": "$", "s": "double"}), (2, {...}))."""
    out = []
    for part in cell.split("|"):
        p, _, pairs = part.partition(":")
        out.append((int(p), dict(pair.split("=", 1) for pair in pairs.split(",") if pair)))
    return tuple(out)


@functools.cache
def pyspark_version() -> str:
    """The pyspark version the catalogue was written from."""
    for line in FILE.read_text().splitlines():
        if line.startswith("pyspark\t"):
            return line.split("\t")[1]
    return ""


def _rows() -> list[list[str]]:
    return [line.split("\t") for line in FILE.read_text().splitlines()
            if line and not line.startswith("#") and not line.startswith("pyspark\t")]


def lookup(name: str) -> SparkFunction | None:
    return catalogue().get(name.lower())


# keyword tokens sqlglot gives some function names (left, date, array, map, filter, ...) are calls too, except the
# operators and predicates written like one (x IN (...), EXISTS (subquery), a DIV (b))
_NOT_CALLS = frozenset({"in", "exists", "any", "some", "all", "div", "and", "or", "not", "like", "ilike", "rlike",
                        "regexp", "between", "case", "is", "when"})
# keywords inside a call's parentheses that make it syntax rather than a list of arguments
_SYNTAX = frozenset({"FROM", "FOR", "IN", "AS", "PLACING", "BOTH", "LEADING", "TRAILING", "IGNORE", "RESPECT",
                     "DISTINCT", "ALL", "ORDER", "USING", "WITHIN"})

# Spark's grammar (SqlBaseParser: timestampadd, timestampdiff): NAME(unit, a, b) with a unit word is syntax, not the
# function of that name (date_add(ts, 1)); the units its analyser takes
_UNIT_CALLS = frozenset({"timestampadd", "dateadd", "date_add", "timestampdiff", "datediff", "date_diff"})
DATETIME_UNITS = frozenset({"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DAYOFYEAR", "HOUR", "MINUTE", "SECOND",
                            "MILLISECOND", "MICROSECOND"})


@dataclass(frozen=True)
class Call:
    name: str  # as written
    offset: int  # of the name, 0-based in the text
    args: tuple[tuple[str, int], ...]  # (argument text, its 0-based offset)
    syntax: bool  # keyword syntax inside: not a plain list of arguments


@functools.lru_cache(maxsize=4096)
def spark_calls(text: str) -> tuple[Call, ...]:
    """The calls of catalogued Spark functions in `text` (outer before inner), each `name(arg, ...)` found on the
    tokens as written (sqlglot maps some calls onto its own expression classes and drops or renames arguments: the
    tokens keep what Spark will read); () when it does not tokenize. A call written with keyword syntax
    (`substring(s FROM 1)`, `trim(BOTH 'x' FROM s)`, `count(DISTINCT a)`) is marked `syntax`: not a list of
    arguments."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.errors import TokenError

    if "(" not in text:
        return ()
    try:
        toks = Spark().tokenize(text)
    except TokenError:  # the parse reports it
        return ()
    return _calls(text, toks)


def _calls(text: str, toks: list[Any]) -> tuple[Call, ...]:
    from sqlglot.tokens import TokenType

    known = catalogue()
    out = []
    for i, tok in enumerate(toks[:-1]):
        if toks[i + 1].token_type != TokenType.L_PAREN or \
                (i > 0 and toks[i - 1].token_type in (TokenType.DOT, TokenType.ALIAS, TokenType.DCOLON)):
            continue  # a field `a.f(`, a type `CAST(x AS decimal(10, 2))`, `x::decimal(10, 2)`
        name = tok.text.lower()
        plain = tok.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
        if name not in known or (not plain and (name in _NOT_CALLS or tok.token_type == TokenType.STRING)):
            continue
        args, syntax, depth, start = [], False, 0, None
        for t in toks[i + 2:]:
            if t.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE):
                depth += 1
            elif t.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE):
                if depth == 0:
                    if start is not None:
                        args.append((text[start:t.start].strip(), start))
                    break
                depth -= 1
            elif depth == 0 and t.token_type == TokenType.COMMA:
                args.append((text[start:t.start].strip() if start is not None else "", start or t.start))
                start = None
                continue
            elif depth == 0 and t.text.upper() in _SYNTAX and t.token_type not in (TokenType.VAR, TokenType.STRING,
                                                                                    TokenType.IDENTIFIER):
                syntax = True
            if start is None:
                start = t.start
        else:
            continue  # not closed: the parse reports it
        if name in _UNIT_CALLS and len(args) == 3 and args[0][0].upper() in DATETIME_UNITS:
            syntax = True  # date_add(HOUR, 1, ts): Spark's timestampadd syntax, not the function date_add
        out.append(Call(tok.text, tok.start + (1 if tok.token_type == TokenType.IDENTIFIER else 0), tuple(args),
                        syntax))
    return tuple(out)


