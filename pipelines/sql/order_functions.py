"""Python functions of functions.sql, aggregate_every.sql and their YAML twins.

etl reads their signatures from the annotations below without importing this module
(`etl validate` runs none of it); at run time the module is shipped to the executors.
"""

from typing import Iterator, NamedTuple

import pandas as pd


class Part(NamedTuple):
    part: str
    pos: int


def mask(customer: str) -> str:
    """The customer's first letter, then stars; a name holding a digit is refused (its row is a dead letter)."""
    if any(ch.isdigit() for ch in customer):
        raise ValueError(f"a customer name holds a digit: {customer}")
    return customer[:1] + "*" * (len(customer) - 1)


def id_parts(order_id: str) -> Iterator[Part]:
    """A row per '-'-separated part of an order id, with its position."""
    for i, part in enumerate(order_id.split("-")):
        yield Part(part, i)


def spread(amount: pd.Series) -> float:
    """The largest amount minus the smallest of a group; a negative amount is refused (the group's row is a dead
    letter)."""
    if (amount < 0).any():
        raise ValueError(f"a negative amount: {amount.min()}")
    return float(amount.max() - amount.min())
