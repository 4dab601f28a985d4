"""The dead-letter columns and schema: the one definition (pure Python, imported on driver and executors).

A stage that can fail builds one frame holding every row plus ERR (the reason a
row failed, NULL for good rows) and PAYLOAD (the row's original text); the
rows with a reason become dead letters with COLUMNS (etl.compile.deadletter
splits the frame; sinks write their rejected rows in the same shape).
"""

from __future__ import annotations

from typing import Any

ERR = "_etl_err"  # reason a row failed (NULL when it did not)
PAYLOAD = "_etl_payload"  # the original text of a failed row
COLUMNS: tuple[tuple[str, str], ...] = (("pipeline", "string"), ("stage", "string"), ("reason", "string"),
                                        ("payload", "string"), ("time", "timestamp"))
DDL = ", ".join(f"{name} {typ}" for name, typ in COLUMNS)  # Spark DDL of a dead-letter frame


def arrow_schema() -> Any:
    """COLUMNS as a pyarrow schema (times in microseconds, UTC, as Spark writes them)."""
    import pyarrow as pa

    types = {"string": pa.string(), "timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema([(name, types[typ]) for name, typ in COLUMNS])
