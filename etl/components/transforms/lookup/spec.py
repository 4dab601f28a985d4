"""The lookup transform's spec: enrich events from a dimension table (a file or a MySQL table), refreshed."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.components.transforms.lookup.hooks import LookupHooks
from etl.registry import component
from etl.spec.base import Identifier, PositiveDuration, TransformBase


@component("transform", "lookup", builder="etl.components.transforms.lookup.build:build")
class LookupTransform(LookupHooks, TransformBase):
    """Enrich events from a dimension table (a static file or mysql source)."""

    type: Literal["lookup"]
    table: Identifier = Field(description="id of a static source (file with static: true, or mysql)")
    on: dict[str, str] = Field(min_length=1, description="event column -> table column")
    fields: list[str] | None = Field(default=None, description="table columns to add (all if absent)")
    how: Literal["inner", "left"] = Field(default="left",
        description="inner drops an event without a match, left keeps it with NULL table columns")
    store: Literal["auto", "broadcast", "rocksdb"] = Field(default="auto",
        description="where the table is kept: broadcast (memory), rocksdb (disk), auto chooses by its size")
    refresh: PositiveDuration | None = Field(default=None, description="reload the table this often")
    STATEFUL: ClassVar[bool] = True  # a query of its own, which reads its table's store
    STATE_WHY: ClassVar[str] = "several inputs"
    PASSES_UPDATES: ClassVar[bool] = False

    def engine_aspects(self) -> tuple[str, ...]:
        return ("store",)

    def input_ids(self) -> list[str]:
        return list(self.inputs) + [self.table]

    def table_input(self) -> str | None:
        return self.table
