"""Decorators a function module may use to declare a signature etl reads without importing it.

    from etl.udf import udf, udtf, udaf

    @udf(returns="bigint", args=["string"])
    def word_count(s): ...

etl reads them from the module's source (etl.spec.signature); at run time they return the function
unchanged, so the module works with or without etl (the decorator may also be copied into it).
"""

from __future__ import annotations

from typing import Any, TypeVar
from collections.abc import Callable

F = TypeVar("F", bound=Callable[..., Any])


def _declare(kind: str, returns: str | None, args: list[str] | None) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        fn.__etl_function__ = {"kind": kind, "returns": returns, "args": args}  # type: ignore[attr-defined]
        return fn

    return deco


def udf(returns: str | None = None, args: list[str] | None = None) -> Callable[[F], F]:
    """A scalar function: a value per row."""
    return _declare("scalar", returns, args)


def udtf(returns: str | None = None, args: list[str] | None = None) -> Callable[[F], F]:
    """A table function: yields rows (tuples) per input row; `returns` names its columns ('w string, n int')."""
    return _declare("table", returns, args)


def udaf(returns: str | None = None, args: list[str] | None = None) -> Callable[[F], F]:
    """An aggregate function: pandas Series of a group's values -> one value."""
    return _declare("aggregate", returns, args)
