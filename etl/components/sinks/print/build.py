"""print sink: each micro-batch to standard output, as JSON lines or a table (at most `max_rows`)."""

from __future__ import annotations

import io
import sys
from typing import Any

import pyarrow as pa

from etl.runtime.sink import AbstractSink, SinkContext


class PrintSink(AbstractSink):
    def __init__(self, spec: Any, ctx: SinkContext):
        super().__init__(spec, ctx)
        self.shown = 0
        self.total = 0
        self._rows: list[dict] = []
        self._columns: list[str] = []

    def _echo(self, text: str) -> None:
        if self.ctx.echo is not None:
            self.ctx.echo(text)
        else:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def prepare_columns(self, df: Any) -> list[Any] | None:
        from pyspark.sql import functions as F

        self._columns = list(df.columns)
        if self.spec.format == "json":
            return [F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])).alias("value")]
        return None

    def begin(self, batch_id: int, schema: pa.Schema) -> None:
        self.shown = self.total = 0
        self._rows = []
        self._batch = batch_id

    def batch_insert(self, rows: pa.Table) -> None:
        self.total += rows.num_rows
        room = self.spec.max_rows - self.shown
        if room <= 0:
            return
        part = rows.slice(0, room)
        self.shown += part.num_rows
        if self.spec.format == "json":
            self._echo("\n".join(str(v) for v in part.column(0).to_pylist()))
        else:
            self._rows.extend(part.to_pylist(maps_as_pydicts="lossy"))  # a map column shown as {key: value}

    def commit(self, batch_id: int) -> None:
        if self.spec.format == "table" and self._rows:
            self._echo(_table(self.ctx.sink_id, batch_id, self._columns or list(self._rows[0]), self._rows))
        if self.total > self.shown:
            self._echo(f"... {self.total - self.shown} more rows in batch {batch_id} of sink '{self.ctx.sink_id}'")


def _table(title: str, batch_id: int, columns: list[str], rows: list[dict]) -> str:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{title} · batch {batch_id}", title_justify="left")
    for c in columns:
        t.add_column(c)
    def key(r: dict) -> tuple:  # a stable, readable order (rows of a batch arrive in no order)
        return tuple((r.get(c) is None, str(r.get(c))) for c in columns)

    for r in sorted(rows, key=key):
        t.add_row(*["" if r.get(c) is None else str(r.get(c)) for c in columns])
    buf = io.StringIO()
    Console(file=buf, width=160, force_terminal=False, color_system=None).print(t)
    return buf.getvalue().rstrip("\n")
