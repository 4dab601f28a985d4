"""The join transform's spec: an interval join of two event-time streams."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import EventTime, TransformBase
from etl.spec.timebound import TimeBounds
from etl.spec.transform_hooks import EventTimeJoinHooks


@component("transform", "join", builder="etl.components.transforms.join.build:build")
class JoinTransform(EventTimeJoinHooks, TransformBase):
    """Stream-stream join of two inputs (left, right) on keys within a time bound (inner or outer)."""

    type: Literal["join"]
    on: list[str] = Field(min_length=1, description="key columns present on both sides")
    how: Literal["inner", "left", "right", "full", "semi", "anti"] = Field(
        default="inner", description="inner, left, right or full (outer); semi: each left row with a match, once; "
        "anti: each left row without one (once the watermark passes its bound); both give the left columns only")
    within: TimeBounds = Field(description="right event time minus the left's: one duration (before or after, "
                               "e.g. '1m') or [lower, upper], e.g. ['-5m', '+1m']")
    condition: str | None = Field(default=None, description="Spark SQL condition besides the keys, over the join's "
                                  "output columns (right columns under their output names, e.g. clicks_ts)")
    left_time: EventTime | None = Field(default=None, description="the left input's event time (default: its source's)")
    right_time: EventTime | None = Field(default=None,
                                         description="the right input's event time (default: its source's)")
    JOIN_WORD: ClassVar[str] = "stream-stream"  # E321's "a stream-stream join needs event time"
