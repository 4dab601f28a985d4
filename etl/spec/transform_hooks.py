"""What the joins of two inputs share (join, temporal_join, regular_join): their output columns, their state traits
and their "exactly two inputs" check; each transform's own hooks (`output_columns(cx, node, inputs)`, `explain_lines()`)
live in its folder, etl/components/transforms/<type>/hooks.py (see etl.spec.base.Component)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

Cols = dict[str, str]


class JoinHooks:
    """What the three joins of two inputs share (join, temporal_join, regular_join): their columns, their state, and
    exactly two inputs, named by INPUT_NAMES in the error."""

    INPUT_NAMES: ClassVar[str] = "[left, right]"
    STATEFUL: ClassVar[bool] = True
    PASSES_UPDATES: ClassVar[bool] = False

    @model_validator(mode="after")
    def _two_inputs(self: Any) -> Any:
        if len(self.inputs) != 2:
            raise ValueError(f"a {self.type} needs exactly two inputs: {self.INPUT_NAMES}")
        return self

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        if len(inputs) != 2:
            return None
        (le, left), (re_, right) = inputs
        for i, key in enumerate(self.on):
            cx.need(left, key, cx.span(node, "on", i), f"join '{node.id}' (on[{i}], left input '{le.ref}')")
            cx.need(right, key, cx.span(node, "on", i), f"join '{node.id}' (on[{i}], right input '{re_.ref}')")
        if self.left_time is not None:
            cx.event_time_field(node, ("left_time", "field"), self.left_time.field, left)
        if self.right_time is not None:
            cx.event_time_field(node, ("right_time", "field"), self.right_time.field, right)
        if left is None or right is None:
            cx.expr(node, ("condition",), self.condition, None, cx.where(node, "condition"))
            return None
        out = dict(left)  # as etl.compile.joining: left columns, then the right's non-key ones, a name the
        taken = {c.lower() for c in left}  # left already uses (case-insensitively) renamed <right input id>_<name>
        for k, v in right.items():
            if k not in self.on:
                out[f"{re_.src}_{k}" if k.lower() in taken else k] = v
        cx.expr(node, ("condition",), self.condition, out, cx.where(node, "condition"))
        return dict(left) if self.how in ("semi", "anti") else out  # a semi / anti join: the left rows

    def explain_lines(self: Any) -> list[str]:
        return [f"{self.how} join on {', '.join(self.on)} within {self.within}"
                + (f" where {self.condition}" if self.condition else "")]


class EventTimeJoinHooks(JoinHooks):
    """The joins whose state the watermark closes (join, temporal_join): each input's event time (left_time,
    right_time, default its source's) is checked (E321)."""

    WATERMARK_STATE: ClassVar[bool] = True
    EVENT_TIME_USE: ClassVar[str] = "join"

    def input_times(self: Any) -> tuple[Any, ...] | None:
        return (self.left_time, self.right_time)
