"""The window transform's column propagation and checks (keys, aggregates, emit flags)."""

from __future__ import annotations

from typing import Any

from etl.spec.aggregates import checked_aggregates, output_type, state_engine_why
from etl.spec.transform_hooks import Cols


class WindowHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        if self.event_time is not None:
            cx.event_time_field(node, ("event_time", "field"), self.event_time.field, cols)
        out: Cols | None = {}
        for i, g in enumerate(self.group_by):
            p = cx.expr(node, ("group_by", i), g, cols, cx.where(node, f"group_by[{i}]"))
            if p is None:
                out = None
            elif out is not None and p.bare:
                src = cx.find(cols, p.name) if cols is not None else None
                out[src or p.name] = cols[src] if src else "unknown"
            elif out is not None:
                out[p.name or g.strip()] = cx.guess_type(g, cols)
        if out is None:
            return None
        out["window_start"] = "timestamp"
        out["window_end"] = "timestamp"
        for _i, agg, in_type, udaf in checked_aggregates(cx, node, cols, self.aggregates, state_engine_why(self)):
            out[agg.as_] = udaf.returns if udaf is not None else output_type(agg.fn, in_type)
        if self.having is not None:
            cx.expr(node, ("having",), self.having, out, cx.where(node, "having"))
        out.update(dict.fromkeys(self.emit.flag_columns(), "boolean"))  # added after `having`, which cannot read them
        return out

    def explain_lines(self: Any) -> list[str]:
        shape = {"tumbling": f"size {self.size}", "sliding": f"size {self.size} slide {self.slide}",
                 "cumulating": f"size {self.size} step {self.step}", "session": f"gap {self.gap}"}[self.kind]
        if self.offset is not None:
            shape += f" offset {self.offset}"
        et = self.event_time
        tm = f"{self.time} time" + (f" {et.field} (watermark {et.watermark})" if et else "")
        out = [f"{self.kind} {shape}, {tm}"]
        if self.group_by:
            out.append("group by: " + ", ".join(self.group_by))
        out.append("aggregates: " + ", ".join(f"{a.as_} = {a.fn}({a.field or '*'}"
                                              + (f", {a.n}" if a.n else "") + ")" for a in self.aggregates))
        if self.having:
            out.append(f"having: {self.having}")
        emit = self.emit
        if emit.early is not None or emit.late != "drop":  # shown so SQL's EMIT and YAML's emit compare too
            late = "late events " + {"drop": "dropped", "dead_letter": "to dead letters"}.get(emit.late, "")
            if emit.late == "update":
                late += (f"update the window for {emit.allowed_lateness}"
                         + (f" (every {emit.every})" if emit.every is not None else "")
                         + f", later ones {'dropped' if emit.too_late == 'drop' else 'to dead letters'}")
            early = f"early every {emit.early}" + (" (processing-time timers)" if emit.timers == "processing" else "")
            out.append("emit: " + ", ".join(([early] if emit.early is not None else []) + [late]))
        return out
