"""Every Flink built-in function and what etl does with it, from the table in etl/sql/flink_functions.tsv.

A row is (category, Flink's syntax, call names, status, Spark SQL, note, a documented example, its result as JSON).
Status `same`: Spark's function or operator has Flink's meaning; `rewritten`: etl.sql.functions (functions.tsv)
gives Flink's meaning; `differs`: Spark's, with the difference in the note (W015 at each call:
etl.sql.functions.differs_row); `unsupported`: a call of the name is
E012 at its position with the note as hint (etl.sql.functions.Functions asks `unsupported`). The reference's table
of Flink functions is `python -m etl.sql.flink_functions` (a test keeps it current).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

STATUSES = ("same", "rewritten", "differs", "unsupported")
# why Flink's TIME(p) is E011 (a column, CAST, a literal): checked on pyspark 4.3.0
TIME_UNSUPPORTED = ("Spark 4.3's TIME is a preview behind spark.sql.timeType.enabled, off by default: a TIME column, "
                    "CAST to TIME and HOUR(t) fail with UNSUPPORTED_TIME_TYPE; its TIME is TIME(6), Flink's TIME(0)")


@dataclass(frozen=True)
class FlinkRow:
    category: str
    syntax: str
    names: tuple[str, ...]  # call names (empty: an operator or a construct)
    status: str
    spark: str
    note: str
    example: str
    result: str  # JSON; empty: no example that a query can check (an aggregate, a clock)


@functools.cache
def table() -> tuple[FlinkRow, ...]:
    rows = []
    for line in (Path(__file__).parent / "flink_functions.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            cat, syntax, names, status, spark, note, example, result = line.split("\t")
            if status not in STATUSES:
                raise ValueError(f"flink_functions.tsv: status {status!r} of {syntax!r} is not one of {STATUSES}")
            rows.append(FlinkRow(cat, syntax, tuple(n for n in names.split(",") if n), status, spark, note, example,
                                 result))
    return tuple(rows)


@functools.cache
def unsupported() -> dict[str, FlinkRow]:
    """Call name -> its row, for the functions etl refuses (E012)."""
    return {n: r for r in table() if r.status == "unsupported" for n in r.names}


def readme_table() -> str:
    """The reference's table of every Flink built-in function (docs/reference/sql-functions.md; generated from
    flink_functions.tsv)."""
    lines = ["| category | Flink | etl | Spark SQL | note |", "|---|---|---|---|---|"]
    for r in table():
        status = {"same": "same", "rewritten": "Flink's meaning (table above)", "differs": "differs",
                  "unsupported": "E012" if any(n in unsupported() for n in r.names) else "not supported"}[r.status]
        cells = [r.category, f"`{r.syntax}`", status, f"`{r.spark}`" if r.spark else "", r.note]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(readme_table(), end="")
