"""The `temporal_join` transform: each row of a stream joined with the version of a versioned table valid at the row's
event time (Flink's event-time temporal join, `JOIN rates FOR SYSTEM_TIME AS OF o.order_time`).

Inputs: [probe, versions]. The versions input is an append stream with event time: each of its rows is a new
version of its `on` key (the table's PRIMARY KEY), valid from its event time until the key's next version (an
upsert; two versions of a key at the same time: the later one read). A probe row at time t joins the version of its
key whose time is the largest <= t; it goes out once the watermark (the smaller of both inputs') has passed t, when
no version that could change its answer can arrive any more; a probe row that arrives with t <= the watermark is
late: dropped (Flink drops it too). `how: inner` drops a row without a version (or whose `condition` is false on
its version), `left` writes it with NULL version columns. A key's versions older than its newest at or before the
watermark leave the state (no row that is not late can join them). A probe row of a NULL key joins no version (a
NULL key equals nothing in SQL); a row or version without an event time is dropped (as a window drops it).
Output columns: as the `join`'s: the probe's, then the versions' non-key ones, a name the probe already uses
renamed `<versions input id>_<name>`. The state engine: etl.components.transforms.temporal_join.build.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import EventTime, TransformBase
from etl.spec.transform_hooks import EventTimeJoinHooks


@component("transform", "temporal_join", builder="etl.components.transforms.temporal_join.build:build")
class TemporalJoinTransform(EventTimeJoinHooks, TransformBase):
    """Each row of the first input joined with the version of the second (a versioned table: a row per new version
    of its key) valid at the row's event time, once the watermark has passed it (Flink's event-time temporal join)."""

    type: Literal["temporal_join"]
    on: list[str] = Field(min_length=1, description="key columns present on both sides: the versioned table's "
                          "primary key")
    how: Literal["inner", "left"] = Field(default="inner", description="inner: a row without a version is dropped; "
                                          "left: it goes out with NULL version columns")
    condition: str | None = Field(default=None, description="Spark SQL condition over the output columns, on the "
                                  "version a row joins: false is no version (inner: dropped, left: NULL columns)")
    left_time: EventTime | None = Field(default=None, description="the probe input's event time (default: its "
                                        "source's)")
    right_time: EventTime | None = Field(default=None, description="the versions' event time, when each became "
                                         "valid (default: their source's)")
    JOIN_WORD: ClassVar[str] = "temporal"  # E321's "a temporal join needs event time"
    INPUT_NAMES: ClassVar[str] = "[probe, versions]"

    def explain_lines(self: Any) -> list[str]:
        probe, versions = self.inputs
        return [f"{self.how} temporal join on {', '.join(self.on)}: each {probe} row joins the {versions} version "
                "valid at its event time (the newest at or before it), once the watermark passes it"
                + (f" where {self.condition}" if self.condition else "")]
