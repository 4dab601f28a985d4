"""CREATE TABLE / CREATE FUNCTION / SET, read from a statement's tokens.

CREATE TABLE columns: `name TYPE`, computed `name AS expr`, `name AS PROCTIME()`,
metadata (`name TYPE header` as rsqldb writes it, `name TYPE METADATA [FROM 'key'] [VIRTUAL]`
as Flink does), `WATERMARK [wk] FOR ts AS ts - INTERVAL 'n' UNIT` or `withOffset(ts, ms)`,
`PRIMARY KEY (a, b) [NOT ENFORCED]`; then `WITH (key = value, 'key' = 'value', ...)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from etl.diagnostics import Span, did_you_mean
from etl.sql.flink_functions import TIME_UNSUPPORTED
from etl.sql.script import Script, SqlSyntax, Statement

TYPES = MappingProxyType({
    "varchar": "string", "string": "string", "char": "string", "text": "string",
    "int": "int", "integer": "int", "bigint": "bigint", "long": "bigint", "smallint": "smallint",
    "tinyint": "tinyint", "float": "float", "real": "float", "double": "double", "boolean": "boolean",
    "bool": "boolean", "timestamp": "timestamp", "timestamp_ltz": "timestamp", "datetime": "timestamp",
    "date": "date", "decimal": "decimal", "numeric": "decimal", "bytes": "binary", "binary": "binary",
    "varbinary": "binary", "array": "array", "map": "map", "row": "struct", "json": "string",
})
_UNITS = MappingProxyType({"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400})


@dataclass
class Column:
    name: str
    type: str  # Spark type
    span: Span
    metadata: str | None = None  # metadata key (header / METADATA FROM)


@dataclass
class Computed:
    name: str
    tokens: list  # expression tokens
    span: Span
    proctime: bool = False


@dataclass
class Option:
    key: str
    value: Any
    key_span: Span
    value_span: Span


@dataclass
class Table:
    name: str
    span: Span  # the table name
    columns: list[Column] = field(default_factory=list)
    computed: list[Computed] = field(default_factory=list)
    watermark: tuple[str, float, Span] | None = None  # (column, seconds, span of the expression)
    primary_key: list[str] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    with_span: Span | None = None
    with_offset: bool = False  # the watermark is rsqldb's / Blink's withOffset(ts, ms)

    @property
    def proctime(self) -> str | None:
        return next((c.name for c in self.computed if c.proctime), None)

    def schema(self) -> dict[str, str]:
        return {c.name: c.type for c in self.columns if c.metadata is None}


@dataclass
class Function:
    name: str
    target: str
    language: str
    span: Span
    target_span: Span | None = None


class Cursor:
    """A position in a statement's tokens."""

    def __init__(self, script: Script, stmt: Statement):
        self.s, self.toks, self.i = script, stmt.tokens, 0

    @property
    def tok(self) -> Any:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def word(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j].text.upper() if j < len(self.toks) else ""

    def is_(self, *words: str) -> bool:
        return self.tok is not None and self.tok.token_type.name not in ("STRING", "IDENTIFIER") \
            and self.word() in words

    def where(self) -> Span:
        if self.tok is not None:
            return self.s.at(self.tok)
        last = self.toks[-1]
        return self.s.span(last.end + 1)

    def take(self) -> Any:
        tok = self.tok
        if tok is None:
            raise SqlSyntax("unexpected end of statement", self.where())
        self.i += 1
        return tok

    def expect(self, *words: str) -> Any:
        if not self.is_(*words):
            got = f"'{self.tok.text}'" if self.tok is not None else "the end of the statement"
            raise SqlSyntax(f"expected {' or '.join(words)}, found {got}", self.where())
        return self.take()

    def name(self, what: str) -> Any:
        tok = self.tok
        if tok is None or tok.token_type.name in ("STRING", "NUMBER", "L_PAREN", "R_PAREN", "COMMA"):
            got = f"'{tok.text}'" if tok is not None else "the end of the statement"
            raise SqlSyntax(f"expected {what}, found {got}", self.where())
        self.i += 1
        while self.is_(".") and self.i + 1 < len(self.toks):  # catalog.db.table: keep the last part
            self.i += 1
            tok = self.take()
        return tok

    def create(self, kind: str, what: str) -> Any:
        """`CREATE [OR REPLACE] [TEMPORARY] <kind> [IF NOT EXISTS] name`: the name token."""
        self.expect("CREATE")
        while self.is_("OR", "REPLACE", "TEMPORARY", "TEMP", "SYSTEM"):
            self.take()
        self.expect(kind)
        if self.is_("IF"):
            self.take(), self.expect("NOT"), self.expect("EXISTS")
        return self.name(what)

    def until_close(self) -> list:
        """Tokens up to the `)` closing the current group (consumed), nested groups included."""
        depth, out = 0, []  # type: tuple[int, list]
        while True:
            tok = self.take()
            if tok.token_type.name == "L_PAREN":
                depth += 1
            elif tok.token_type.name == "R_PAREN":
                if depth == 0:
                    return out
                depth -= 1
            out.append(tok)


def _items(toks: list) -> list[list]:
    """Split tokens on top-level commas."""
    items, cur, depth = [], [], 0  # type: tuple[list[list], list, int]
    for tok in toks:
        kind = tok.token_type.name
        if kind in ("L_PAREN", "LT") and not (kind == "LT" and not cur):
            depth += 1
        elif kind in ("R_PAREN", "GT"):
            depth -= 1
        if kind == "COMMA" and depth == 0:
            items.append(cur)
            cur = []
            continue
        cur.append(tok)
    if cur:
        items.append(cur)
    return items


def parse_table(script: Script, stmt: Statement) -> Table:
    c = Cursor(script, stmt)
    name_tok = c.create("TABLE", "a table name")
    table = Table(name_tok.text, script.at(name_tok))
    if c.is_("("):
        c.take()
        for item in _items(c.until_close()):
            _column_item(script, table, item)
    if c.tok is not None:
        with_tok = c.expect("WITH")
        table.with_span = script.at(with_tok)
        c.expect("(")
        for item in _items(c.until_close()):
            table.options.append(_option(script, item))
    if c.tok is not None:
        raise SqlSyntax(f"unexpected '{c.tok.text}' after the WITH options", c.where())
    return table


def _option(script: Script, item: list) -> Option:
    eq = next((i for i, t in enumerate(item) if t.token_type.name == "EQ"), None)
    if not item:
        raise SqlSyntax("empty option in WITH (...)", script.at(item[0]) if item else Span(script.file))
    if eq is None or eq == 0 or eq == len(item) - 1:
        raise SqlSyntax("expected key = 'value' in WITH (...)", script.at(item[0]),
                        "write options as key = 'value', separated by commas")
    key = "".join(t.text if t.token_type.name != "STRING" else t.text for t in item[:eq])
    vals = item[eq + 1:]
    if len(vals) != 1 or vals[0].token_type.name not in ("STRING", "NUMBER", "TRUE", "FALSE", "VAR"):
        raise SqlSyntax("an option value is one literal, e.g. 'text' or 42", script.at(vals[0]))
    v = vals[0]
    return Option(key, v.text, script.at(item[0]), script.at(v))


def _column_item(script: Script, table: Table, item: list) -> None:
    if not item:
        return
    head = item[0].text.upper() if item[0].token_type.name not in ("STRING", "IDENTIFIER") else ""
    if head == "WATERMARK":
        table.watermark = _watermark(script, item)
        table.with_offset = any(t.text.upper() == "WITHOFFSET" for t in item)
        return
    if head.startswith(("PRIMARY", "CONSTRAINT")):
        j = next((i for i, t in enumerate(item) if t.token_type.name == "L_PAREN"), None)
        if j is None:
            raise SqlSyntax("expected PRIMARY KEY (columns)", script.at(item[0]))
        close = next(i for i, t in enumerate(item) if t.token_type.name == "R_PAREN")
        names = [t.text for t in item[j + 1:close] if t.token_type.name != "COMMA"]
        table.primary_key = names
        return
    name = item[0]
    if len(item) == 1:
        raise SqlSyntax(f"column '{name.text}' needs a type", script.span(name.end + 1),
                        "write `name TYPE`, e.g. `user_id VARCHAR`")
    if item[1].token_type.name == "ALIAS":  # computed column
        expr = item[2:]
        if not expr:
            raise SqlSyntax(f"computed column '{name.text}' needs an expression", script.at(item[1]))
        proc = len(expr) >= 3 and expr[0].text.upper() == "PROCTIME" and expr[1].token_type.name == "L_PAREN"
        table.computed.append(Computed(name.text, expr, script.at(name), proc))
        return
    _physical_column(script, table, name, item)


def _physical_column(script: Script, table: Table, name: Any, item: list) -> None:
    """`name TYPE [HEADER | METADATA [FROM 'key'] [VIRTUAL]] [NOT NULL] [PRIMARY KEY [NOT ENFORCED]] [COMMENT '...']`"""
    typ, rest = _type(script, item[1:])
    col = Column(name.text, typ, script.at(name))
    words = [t.text.upper() for t in rest]
    if words[:1] == ["HEADER"]:
        col.metadata = name.text
        rest, words = rest[1:], words[1:]
    elif words[:1] == ["METADATA"]:
        col.metadata = name.text
        if words[1:2] == ["FROM"] and len(rest) > 2:
            col.metadata = rest[2].text
            rest, words = rest[3:], words[3:]
        else:
            rest, words = rest[1:], words[1:]
        if words[:1] == ["VIRTUAL"]:
            rest, words = rest[1:], words[1:]
    if words[:2] == ["NOT", "NULL"]:
        rest, words = rest[2:], words[2:]
    if words[:1] == ["PRIMARY KEY"] or words[:2] == ["PRIMARY", "KEY"]:
        n = 1 if words[0] == "PRIMARY KEY" else 2
        table.primary_key = [name.text]
        rest, words = rest[n:], words[n:]
        if words[:2] == ["NOT", "ENFORCED"]:
            rest, words = rest[2:], words[2:]
    if words[:1] == ["COMMENT"] and len(rest) == 2:
        rest = []
    if rest:
        raise SqlSyntax(f"unexpected '{rest[0].text}' in the definition of column '{name.text}'",
                        script.at(rest[0]))
    table.columns.append(col)


def _type(script: Script, toks: list) -> tuple[str, list]:
    base = toks[0]
    word = base.text.lower()
    if word in ("time", "time_ltz"):
        raise SqlSyntax(f"the {base.text.upper()} type is not supported ({TIME_UNSUPPORTED})",
                        script.at(base), "declare the column STRING (text such as 12:00:00) or TIMESTAMP", "E011")
    if word not in TYPES:
        raise SqlSyntax(f"unknown column type '{base.text}'", script.at(base),
                        did_you_mean(word.upper(), [t.upper() for t in TYPES]) or
                        "types: VARCHAR, INT, BIGINT, DOUBLE, BOOLEAN, TIMESTAMP, DATE, DECIMAL(p, s), ...")
    j = 1
    args: list = []
    if j < len(toks) and toks[j].token_type.name in ("L_PAREN", "LT"):
        depth = 0
        for k in range(j, len(toks)):
            kind = toks[k].token_type.name
            if kind in ("L_PAREN", "LT"):
                depth += 1
            elif kind in ("R_PAREN", "GT"):
                depth -= 1
                if depth == 0:
                    args = toks[j + 1:k]
                    j = k + 1
                    break
        else:
            raise SqlSyntax(f"unclosed type arguments of '{base.text}'", script.at(toks[j]))
    spark = TYPES[word]
    if spark == "decimal" and args:
        spark = "decimal(" + ",".join(t.text for t in args if t.token_type.name != "COMMA") + ")"
    elif spark in ("array", "map", "struct") and args:
        spark = f"{spark}<" + script.text[args[0].start:args[-1].end + 1].lower() + ">"
        spark = re.sub(r"\bvarchar\b", "string", spark)
    return spark, toks[j:]


def _watermark(script: Script, item: list) -> tuple[str, float, Span]:
    words = [t.text.upper() for t in item]
    try:
        f = words.index("FOR")
        a = words.index("AS", f)
    except ValueError:
        raise SqlSyntax("expected WATERMARK FOR column AS column - INTERVAL 'n' SECOND", script.at(item[0])) from None
    col = item[f + 1].text
    expr = item[a + 1:]
    span = script.at(expr[0]) if expr else script.at(item[a])
    ew = [t.text.upper() for t in expr]
    if ew[:2] == ["WITHOFFSET", "("] and len(expr) >= 6:  # withOffset(ts, 2000): milliseconds
        return col, float(expr[4].text) / 1000.0, span
    if len(expr) == 1 and expr[0].text == col:
        return col, 0.0, span
    if len(expr) >= 5 and expr[0].text == col and ew[1] == "-" and ew[2] == "INTERVAL":
        n = expr[3].text
        unit = ew[4].rstrip("S") if ew[4].rstrip("S") in _UNITS else ew[4]
        if unit in _UNITS and re.fullmatch(r"\d+(\.\d+)?", n):
            return col, float(n) * _UNITS[unit], span
    raise SqlSyntax("unsupported watermark expression", span,
                    f"write `{col} - INTERVAL '5' SECOND` or `withOffset({col}, 5000)`")


def parse_function(script: Script, stmt: Statement) -> Function:
    c = Cursor(script, stmt)
    name = c.create("FUNCTION", "a function name")
    c.expect("AS")
    target = c.take()
    if target.token_type.name != "STRING":
        raise SqlSyntax("expected the function as a string 'module:callable'", script.at(target))
    lang = "PYTHON"
    if c.is_("LANGUAGE"):
        c.take()
        word = c.take()
        lang = word.text.upper()
        if lang != "PYTHON":
            raise SqlSyntax(f"CREATE FUNCTION ... LANGUAGE {word.text}: only Python functions are supported",
                            script.at(word), "write LANGUAGE PYTHON (or leave it out)", "E011")
    where = target.text
    if ":" not in where and "." in where:  # Flink's Python spelling 'module.function' is etl's 'module:function'
        where = ":".join(where.rsplit(".", 1))
    return Function(name.text, where, lang, script.at(name), script.at(target))


def parse_set(script: Script, stmt: Statement) -> Option:
    toks = stmt.tokens[1:]
    return _option(script, toks)
