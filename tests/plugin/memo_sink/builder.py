"""The memo sink's builder: an AbstractSink appending JSON lines (imported only when a pipeline runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from etl.runtime.sink import AbstractSink, SinkContext


class MemoSink(AbstractSink):
    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self.path = Path(ctx.resolve(spec.path))
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def prepare_columns(self, df: Any) -> list[Any] | None:
        from pyspark.sql import functions as F

        return [F.col(f"`{name}`") for name in self.spec.fields]

    def batch_insert(self, rows: pa.Table) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            for row in rows.to_pylist():
                fh.write(json.dumps(row, sort_keys=True, default=str) + "\n")
