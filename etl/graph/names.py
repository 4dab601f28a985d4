"""Column names: case-insensitive lookup and did-you-mean hints, linear over wide column sets.

Spark matches column names case-insensitively. A small column set is scanned; a large one gets
an index (lower name -> first column, and a Suggester for hints), kept while its names stay the
same, so a select of thousands of fields over thousands of columns costs one index, not a scan
per field.
"""

from __future__ import annotations

from etl.diagnostics import Suggester, did_you_mean
from etl.workercache import WorkerCache


def find(cols: dict[str, str], name: str) -> str | None:
    """The column of `cols` that `name` resolves to (case-insensitively), or None."""
    if name in cols:
        return name
    low = name.lower()
    if len(cols) > _SMALL:
        return _index(cols)[1].get(low)
    for c in cols:
        if c.lower() == low:
            return c
    return None


_SMALL = 32  # column sets this small are scanned; larger ones get an index (wide schemas stay linear)
# id(a column set) -> its index, checked against its names on use (256 kept)
_INDEXES: WorkerCache[int, tuple[tuple[str, ...], dict[str, str], list]] = WorkerCache("did-you-mean indexes", 256)


def _index(cols: dict[str, str]) -> tuple[tuple[str, ...], dict[str, str], list]:
    """(names, lower name -> first column, [Suggester or None]) of a column set, kept while its names stay."""
    names = tuple(cols)
    hit = _INDEXES.get(id(cols))
    if hit is None or hit[0] != names:
        lowered: dict[str, str] = {}
        for c in names:
            lowered.setdefault(c.lower(), c)
        hit = _INDEXES[id(cols)] = (names, lowered, [None])
    return hit


def suggest(name: str, cols: dict[str, str]) -> str | None:
    if len(cols) <= _SMALL:
        return did_you_mean(name, cols)
    slot = _index(cols)[2]
    if slot[0] is None:
        slot[0] = Suggester(cols)
    return slot[0].hint(name)
