"""The `regular_join` transform: Flink's regular (unbounded) INNER join of two streams, `FROM a JOIN b ON a.k = b.k`
with no time bound.

Every row of either input is kept in the state of its `on` key and joined with every row the other input has kept
for that key: each pair goes out once, when its second row arrives (in one micro-batch, the rows in the order the
batch hands them over); `condition` (over the output columns) drops the pairs it is not true for. A row of a NULL
key joins nothing (a NULL key equals nothing in SQL) and is not kept. `ttl` is Flink's `table.exec.state.ttl`: a
kept row joins no row of a micro-batch whose processing time is `ttl` or more after the one it was stored in (an
identical row of the same side stored again restarts both copies' time, as Flink's count of that row is written
again); it leaves the state when its key gets its next row (Flink cleans expired state in the background: the
pairs are the same). Without `ttl` the state grows without bound (`etl explain` says so). No event time is needed and the output carries none (Flink's regular join
drops the time attribute). Output columns: as the `join`'s. A separate type from `join`, whose `within` bounds
the state by event time on Spark's stream-stream join: this one is a state engine of its own
(etl.components.transforms.regular_join.build), as `temporal_join`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import PositiveDuration, TransformBase
from etl.spec.transform_hooks import JoinHooks


@component("transform", "regular_join", builder="etl.components.transforms.regular_join.build:build")
class RegularJoinTransform(JoinHooks, TransformBase):
    """Each row of either input joined with every row of the other kept for its key (Flink's regular inner join,
    no time bound), the kept rows expiring `ttl` after they were stored (processing time)."""

    left_time: ClassVar[None] = None  # JoinHooks' event times: none (processing time)
    right_time: ClassVar[None] = None
    type: Literal["regular_join"]
    on: list[str] = Field(min_length=1, description="key columns present on both sides")
    how: Literal["inner"] = Field(default="inner", description="inner only: an outer regular join updates its "
                                  "padded rows (Flink retracts them), etl's sinks append")
    condition: str | None = Field(default=None, description="Spark SQL condition besides the keys, over the join's "
                                  "output columns: a pair it is not true for is dropped")

    def event_time_out(self) -> bool | None:
        return False  # processing time: Flink's regular join drops the time attribute
    ttl: PositiveDuration | None = Field(default=None, description="a kept row joins nothing this long after it "
                                         "was stored, in processing time (Flink's table.exec.state.ttl); absent: "
                                         "the state grows without bound")

    def explain_lines(self: Any) -> list[str]:
        left, right = self.inputs
        lines = [f"{self.how} regular join on {', '.join(self.on)}: each {left} or {right} row joins every row of "
                 "the other kept for its key" + (f" where {self.condition}" if self.condition else "")]
        if self.ttl is not None:
            return lines + [f"state: a kept row expires {self.ttl} after it was stored (processing time; it leaves the state "
                           "when its key gets its next row)"]
        return lines + ["WARNING: no ttl: every row stays in the state for good, which grows without bound "
                        "(set ttl, in SQL SET 'table.exec.state.ttl')"]
