"""A sink type defined outside etl: the `memo` sink, registered through the `etl.components` entry point.

It appends each batch's rows as JSON lines to a file. Its spec declares what
etl asks of a component (its columns check, its explain line, how it handles a
replayed batch); its builder is named, not imported, so `etl validate` never
imports it. tests/unit/test_plugin.py makes it visible with a temporary
`*.dist-info/entry_points.txt` on the path; no file under etl/ knows about it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import SinkBase


@component("sink", "memo", builder="memo_sink.builder:MemoSink")
class MemoSink(SinkBase):
    """Rows appended to a JSON-lines file (at least once)."""

    type: Literal["memo"]
    path: str = Field(description="file the rows are appended to; relative to the pipeline file")
    fields: list[str] = Field(min_length=1, description="columns written, in order")

    REPLAY: ClassVar[str | None] = "a replayed batch is appended again"

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        cols = cx.first(inputs)
        for i, name in enumerate(self.fields):
            cx.need(cols, name, cx.span(node, "fields", i), cx.where(node, f"fields[{i}]"))
        return cols

    def explain_lines(self) -> list[str]:
        return [f"appends {', '.join(self.fields)} to {self.path}"]

    def output_key(self) -> str | None:
        return f"path:{self.path}"
