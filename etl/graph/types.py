"""Spark SQL data types as a schema declares them (`{column: type}`), parsed by a small grammar.

Pure Python, no JVM: the same type strings Spark's DDL parser accepts for columns, e.g.
`bigint`, `decimal(10,2)`, `varchar(64)`, `array<string>`, `map<string, array<int>>`,
`struct<name: string, tags: array<string> NOT NULL COMMENT 'x'>`, `interval day to second`.

    type      := primitive | decimal ['(' INT [',' INT] ')'] | (char | varchar) '(' INT ')'
               | array '<' type '>' | map '<' type ',' type '>' | struct '<' [field {',' field}] '>'
               | interval [unit [to unit]]
    field     := name [':'] type [NOT NULL] [COMMENT 'text']

`parse_type(text)` returns None when the text is a valid type, else a `TypeError_` naming the
offending token and its 0-based offset in the text, for a diagnostic positioned on that token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PRIMITIVES = ("string", "int", "integer", "bigint", "long", "smallint", "short", "tinyint", "byte", "double",
              "float", "real", "boolean", "date", "timestamp", "timestamp_ntz", "timestamp_ltz", "binary", "void",
              "variant")
_DECIMALS = ("decimal", "dec", "numeric")
_YEAR_MONTH = ("year", "month")
_DAY_TIME = ("day", "hour", "minute", "second")
KEYWORDS = PRIMITIVES + _DECIMALS + ("char", "varchar", "array", "map", "struct", "interval")
MAX_DEPTH = 32  # nesting of array/map/struct
MAX_LENGTH = 2**31 - 1  # char/varchar length

_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<int>\d+)|(?P<quoted>`(?:[^`]|``)*`)"
                    r"|(?P<string>'(?:[^'\\]|\\.)*')|(?P<punct>[<>(),:]))")


@dataclass(frozen=True)
class TypeError_:
    message: str
    offset: int  # 0-based offset of the bad token in the type text
    token: str


class _Fail(Exception):
    def __init__(self, err: TypeError_):
        self.err = err


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks: list[tuple[str, str, int]] = []  # (kind, text, offset)
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                start = pos + len(text[pos:]) - len(text[pos:].lstrip())
                raise _Fail(TypeError_(f"unexpected character {text[start]!r}", start, text[start]))
            kind = m.lastgroup or "punct"
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "", len(self.text.rstrip()))

    def fail(self, what: str) -> _Fail:
        kind, tok, off = self.peek()
        found = "the end of the type" if kind == "end" else repr(tok)
        return _Fail(TypeError_(f"expected {what}, found {found}", off, tok))

    def take(self, punct: str) -> None:
        if self.peek()[1] != punct:
            raise self.fail(f"'{punct}'")
        self.i += 1

    def word(self) -> str | None:
        kind, tok, _ = self.peek()
        return tok.lower() if kind == "word" else None

    def integer(self, what: str, lo: int, hi: int) -> int:
        kind, tok, off = self.peek()
        if kind != "int":
            raise self.fail(what)
        n = int(tok) if len(tok) < 12 else hi + 1
        if not lo <= n <= hi:
            raise _Fail(TypeError_(f"{what} must be between {lo} and {hi}, not {tok}", off, tok))
        self.i += 1
        return n

    def type_(self, depth: int = 0) -> None:
        _, tok, off = self.peek()
        if depth > MAX_DEPTH:
            raise _Fail(TypeError_(f"types nest more than {MAX_DEPTH} levels deep", off, tok))
        w = self.word()
        if w is None:
            raise self.fail("a type")
        self.i += 1
        if w in PRIMITIVES:
            return
        if w in _DECIMALS:
            if self.peek()[1] == "(":
                self.i += 1
                p = self.integer("decimal precision", 1, 38)
                if self.peek()[1] == ",":
                    self.i += 1
                    self.integer("decimal scale", 0, p)
                self.take(")")
            return
        if w in ("char", "varchar"):
            self.take("(")
            self.integer(f"{w} length", 1, MAX_LENGTH)
            self.take(")")
            return
        if w == "array":
            self.take("<")
            self.type_(depth + 1)
            self.take(">")
            return
        if w == "map":
            self.take("<")
            self.type_(depth + 1)
            self.take(",")
            self.type_(depth + 1)
            self.take(">")
            return
        if w == "struct":
            self.take("<")
            if self.peek()[1] != ">":
                self.field(depth)
                while self.peek()[1] == ",":
                    self.i += 1
                    self.field(depth)
            self.take(">")
            return
        if w == "interval":
            self.interval()
            return
        raise _Fail(TypeError_(f"unknown type {tok!r}", off, tok))

    def field(self, depth: int) -> None:
        kind, _, _ = self.peek()
        if kind not in ("word", "quoted"):
            raise self.fail("a field name")
        self.i += 1
        if self.peek()[1] == ":":
            self.i += 1
        self.type_(depth + 1)
        if self.word() == "not":
            self.i += 1
            if self.word() != "null":
                raise self.fail("NULL after NOT")
            self.i += 1
        if self.word() == "comment":
            self.i += 1
            if self.peek()[0] != "string":
                raise self.fail("a quoted comment")
            self.i += 1

    def interval(self) -> None:
        units = _YEAR_MONTH + _DAY_TIME
        start = self.word()
        if start not in units:
            return  # a bare `interval` (calendar interval)
        self.i += 1
        if self.word() != "to":
            return
        self.i += 1
        end, (_, tok, off) = self.word(), self.peek()
        group = _YEAR_MONTH if start in _YEAR_MONTH else _DAY_TIME
        if end not in group or group.index(end) <= group.index(start):
            raise _Fail(TypeError_(f"invalid interval end {tok or 'missing'!r} after {start} to", off, tok))
        self.i += 1


def parse_type(text: str) -> TypeError_ | None:
    """None when `text` is a Spark SQL data type, else what is wrong and where."""
    if not isinstance(text, str):
        return TypeError_(f"a type is text, not {type(text).__name__}", 0, str(text))
    try:
        p = _Parser(text)
        p.type_()
        kind, tok, off = p.peek()
        if kind != "end":
            raise _Fail(TypeError_(f"unexpected {tok!r} after the type", off, tok))
    except _Fail as f:
        return f.err
    return None


def struct_fields(text: str) -> dict[str, str] | None:
    """The fields of a struct type `struct<a: int, b: struct<...>>` as {name: type text}, in order; None when
    `text` is not a valid struct type."""
    if not isinstance(text, str) or parse_type(text) is not None:
        return None
    p = _Parser(text)
    if p.word() != "struct":
        return None
    p.i += 1
    p.take("<")
    out: dict[str, str] = {}
    while p.peek()[1] != ">":
        kind, name, _ = p.peek()
        p.i += 1
        if kind == "quoted":
            name = name[1:-1].replace("``", "`")
        if p.peek()[1] == ":":
            p.i += 1
        start = p.peek()[2]
        p.type_(1)
        out[name] = text[start:p.peek()[2]].strip()
        while p.peek()[1] not in (",", ">"):  # NOT NULL, COMMENT '...'
            p.i += 1
        if p.peek()[1] == ",":
            p.i += 1
    return out
