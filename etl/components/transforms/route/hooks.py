"""The route transform's column propagation and explain lines."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


class RouteHooks:
    @classmethod
    def raw_refs(cls, item: dict) -> tuple[tuple[str, ...] | None, str | None]:
        routes = item.get("routes")
        if not isinstance(routes, dict) or not all(isinstance(k, str) for k in routes):
            return None, None
        default = item.get("default")
        return tuple(routes) + ((default,) if isinstance(default, str) else ()), None

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        for label, cond in self.routes.items():
            cx.expr(node, ("routes", label), cond, cols, cx.where(node, f"routes.{label}"))
        return cols

    def explain_lines(self: Any) -> list[str]:
        out = [f"{label}: {cond}" for label, cond in self.routes.items()]
        if self.default:
            out.append(f"{self.default}: (no route matched)")
        if self.exclusive:
            out.append("exclusive: first matching route only")
        return out
