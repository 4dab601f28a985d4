"""The print sink's spec: rows to standard output."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import SinkBase


@component("sink", "print", builder="etl.components.sinks.print.build:PrintSink")
class PrintSink(SinkBase):
    """Rows printed on the driver's console, for trying a pipeline out."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("print",)

    DRIVER_ONLY: ClassVar[str] = "prints on the driver's console"  # etl.physical's `write` aspect

    type: Literal["print"]
    format: Literal["json", "table"] = Field(default="json", description="json (a line per row) or table")
    max_rows: int = Field(default=20, ge=1, description="rows shown per batch at most")
