"""A replayable streaming source that serves fixed micro-batches, one per trigger (tests only).

`spark.readStream.format("etl_test_batches").option("path", file).option("schema", ddl)`:
the JSON file holds a list of batches (lists of row objects). Offsets are batch
indexes, checkpointed by Spark, so a restarted query re-reads exactly the same
batches; `latestOffset` returns one more batch per trigger, which pins the
batch composition the oracle assumes.
"""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

NAME = "etl_test_batches"


class BatchesSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return self.options["schema"]

    def streamReader(self, schema: Any) -> BatchesReader:
        return BatchesReader(self.options["path"], schema, int(self.options.get("per_trigger", "1")))


class _Batch(InputPartition):
    def __init__(self, index: int):
        self.index = index


class BatchesReader(DataSourceStreamReader):
    def __init__(self, path: str, schema: Any, per_trigger: int = 1):
        self.path = path
        self.names = [f.name for f in schema.fields]
        self.per_trigger = per_trigger

    def _count(self) -> int:
        with open(self.path) as f:
            return len(json.load(f))

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        s = (start or {"batch": 0})["batch"]
        return {"batch": min(s + self.per_trigger, self._count())}

    def partitions(self, start: dict, end: dict) -> list[_Batch]:
        return [_Batch(i) for i in range(start["batch"], end["batch"])]

    def read(self, partition: _Batch) -> Iterator[tuple]:
        with open(self.path) as f:
            rows = json.load(f)[partition.index]
        for r in rows:
            yield tuple(r.get(n) for n in self.names)


def write_batches(path: Any, batches: list) -> None:
    """Replace the batches file atomically: a running query's `latestOffset` may read it at any moment."""
    import os

    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(batches, f)
    os.replace(tmp, path)


def register(spark: Any) -> None:
    spark.dataSource.register(BatchesSource)
