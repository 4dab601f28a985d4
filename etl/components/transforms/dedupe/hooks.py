"""The dedupe transform's column propagation and explain lines."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


class DedupeHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        for i, k in enumerate(self.keys):
            cx.need(cols, k, cx.span(node, "keys", i), cx.where(node, f"keys[{i}]"))
        if self.event_time is not None:
            cx.event_time_field(node, ("event_time", "field"), self.event_time.field, cols)
        return cols

    def explain_lines(self: Any) -> list[str]:
        et = self.event_time
        out = ["keys: " + ", ".join(self.keys) + (f", event time {et.field} (watermark {et.watermark})" if et else "")]
        if self.keep == "last":
            out.append("keep last: a key's newest event by event time, once per micro-batch that brought a newer one "
                       "(updates keyed by " + ", ".join(self.keys) + ")")
        return out
