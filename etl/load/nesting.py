"""The nesting limit of the expressions users write (SQL expressions, Sigma conditions): one guard for both.

The parsers etl hands these texts to recurse once (sqlglot: about 20 Python frames) per level of
nesting, and so do the walks over their trees: an expression nested deeper than Python's stack
would end in a RecursionError. Chains of one operator (`a OR b OR ...`, `x AND y AND ...`,
`p + q + ...`) are not nesting: they are read and walked iteratively, 10,000 terms and more.
What counts, one level each: an open parenthesis (a call's too) or bracket, a CASE, and a prefix
NOT / `!` / `~` / unary minus until its operand ends (the next AND, OR, comma, THEN, WHEN or ELSE
at its level, or the parenthesis that encloses it). Deeper than MAX_NESTING is one positioned
error naming the limit, before any parser sees the text.
"""

from __future__ import annotations

from typing import TypeVar
from collections.abc import Iterable

T = TypeVar("T")

MAX_NESTING = 32  # levels; sqlglot parses 42 nested calls at Python's default recursion limit
# Operators deep a Spark SQL expression may be, a chain counting one per term: Spark's analyzer and optimizer
# recurse per level (measured, local[1]: a WHERE of 1,000 ANDed `b <> i` ran, 1,500 was a StackOverflowError)
MAX_SPARK_DEPTH = 500

OPEN, CLOSE, UNARY, SEP, OTHER = "open", "close", "unary", "sep", "other"


def too_deep(tokens: Iterable[tuple[str, T]], limit: int = MAX_NESTING) -> T | None:
    """The first token (its `at`: an offset, a token) that nests deeper than `limit`, or None. `tokens`: (kind, at)
    pairs, kind one of OPEN, CLOSE, UNARY, SEP, OTHER."""
    stack: list[int] = [0]  # per open level: the unary operators still open in it
    depth = 0
    for kind, at in tokens:
        if kind in (OPEN, UNARY):
            depth += 1
            if depth > limit:
                return at
            if kind == OPEN:
                stack.append(0)
            else:
                stack[-1] += 1
        elif kind == CLOSE:
            if len(stack) > 1:
                depth -= stack.pop() + 1
        elif kind == SEP:
            depth -= stack[-1]
            stack[-1] = 0
    return None


def message(what: str, limit: int = MAX_NESTING) -> str:
    return f"{what} nested more than {limit} levels deep (etl's limit: parentheses, calls, CASE and NOT count " \
           "one level each)"


HINT = "split it: name a part (a derived column, a view, a detection) and refer to it; a chain of ANDs or ORs " \
       "is not nesting and may be as long as needed"
SPARK_HINT = "split it over steps (a filter after a filter ANDs their conditions; a derive per part); a SQL WHERE of " \
    "comparisons with literals, LIKE, REGEXP, IN and IS NULL runs as filter rules, of any length"
