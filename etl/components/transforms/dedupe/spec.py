"""The dedupe transform's spec: the first (or last) row of each key within a time bound."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.components.transforms.dedupe.hooks import DedupeHooks
from etl.registry import component
from etl.spec.base import EventTime, TransformBase


@component("transform", "dedupe", builder="etl.components.transforms.dedupe.build:build")
class DedupeTransform(DedupeHooks, TransformBase):
    """Drop repeated events with the same keys within the watermark (keep: first), or keep each key's newest
    event by event time (keep: last: a row per key that got a newer event, an update stream)."""

    type: Literal["dedupe"]
    keys: list[str] = Field(min_length=1, description="columns whose equal values make a repeat")
    event_time: EventTime | None = Field(default=None,
        description="the event time whose watermark bounds the state (default: the input's)")
    keep: Literal["first", "last"] = Field(
        default="first", description="first: the first event per key, repeats dropped while the key is in state; "
        "last: after each micro-batch the key's newest event when it is newer than every earlier one (the state "
        "of a key ends when the watermark passes its newest event time)")
    STATEFUL: ClassVar[bool] = True
    WATERMARK_STATE: ClassVar[bool] = True
    PASSES_UPDATES: ClassVar[bool] = False
    EVENT_TIME_USE: ClassVar[str] = "state"

    def updates_keys(self) -> bool:
        return self.keep == "last"

    def update_keys(self) -> str:
        return ", ".join(self.keys)
