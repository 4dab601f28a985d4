"""What the query compilers share: a relation a query reads (Rel), the relations in scope (Scope), where a parsed
node is in the script (pos), Skip, and small helpers over parsed queries. Every compiler of the SQL front-end imports
this module; it imports none of them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from etl.diagnostics import Span


class Skip(Exception):
    """A statement depends on one that failed: skip it without another diagnostic."""


@dataclass
class Rel:
    """A relation a query can read: its node id and what the front-end knows of its columns."""

    id: str
    cols: list[str] | None
    event_time: str | None = None
    proctime: str | None = None
    table: Any = None  # the CREATE TABLE of a source (dimension tables)
    static: bool = False
    wm: dict | None = None  # event time set after the source (a parsed column): windows, joins, dedupes take it
    flags: tuple[str, ...] = ()  # flag columns of updates (etl.sql.aggregate), hidden from `*` and INSERT's mapping
    window: tuple[str, ...] = ()  # names of a window's start/end columns here (TopN per window: etl.sql.topn)
    hidden: tuple[str, ...] = ()  # columns the query reads but does not pass on (GROK's structs: etl.sql.grok)


@dataclass
class Scope:
    """Relations visible in a query: alias -> (rel, column -> output column)."""

    entries: dict[str, tuple[Rel, dict[str, str]]] = field(default_factory=dict)
    # per stream join: (the left side's columns, the right alias, the right side's columns as its table has them)
    joined: list[tuple[frozenset[str], str, frozenset[str]]] = field(default_factory=list)
    # (alias, key column) of the side an outer join pads -> that side's event-time column: NULL in a padded row
    padded: dict[tuple[str, str], str] = field(default_factory=dict)
    # (alias, key column) of the table of a LEFT lookup join -> the event column it reads (W015: not NULL unmatched)
    lookup_keys: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, alias: str, rel: Rel, rename: dict[str, str] | None = None) -> None:
        self.entries[alias.lower()] = (rel, rename or {})


def pos(b: Any, node: exp.Expression | None) -> Span:
    """Where a parsed node starts in the script (its first token with a position)."""
    best = None
    if node is not None:
        for n in node.walk():
            start = n.meta.get("start") if n.meta else None
            if start is not None and (best is None or start < best):
                best = start
    return b.script.span(best) if best is not None else b.stmt_span


def tvf_of_table(src: exp.Expression) -> bool:
    """Is `src` a FROM item `TABLE(TUMBLE(...))`?"""
    return isinstance(src, exp.Table) and isinstance(src.this, exp.Anonymous) and src.this.name.upper() == "TABLE"


def is_star(e: exp.Expression) -> bool:
    return isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))


AGGS = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.ApproxDistinct, exp.ArrayAgg, exp.First, exp.Last)


def has_agg(q: exp.Select) -> bool:
    return any(isinstance(n, AGGS) for e in q.expressions for n in e.walk())


def sql_text(node: exp.Expression, paren: bool = False) -> str:
    text = node.sql(dialect="spark")
    return f"({text})" if paren and isinstance(node, exp.Or) else text


def quote_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"`{name}`"
