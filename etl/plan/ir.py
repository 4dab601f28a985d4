"""The plan IR: small frozen dataclasses; one class runs it (compile/runtime), another explains it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from etl.graph.model import Graph


@dataclass(frozen=True)
class Delivery:
    sink_id: str
    guarantee: str  # "exactly-once" | "at-least-once"
    reason: str


@dataclass(frozen=True)
class Step:
    """One node of the graph as the runtime sees it, with its optimized program (if any)."""

    node_id: str
    kind: str
    type: str
    program: Any = None  # e.g. a FilterProgram for filters with rules
    explain: str | None = None  # the optimizer's text for `program` (shown by `etl explain`)
    rule_files: tuple = ()  # filters: the rule files' state when `program` was compiled (hot reload compares it)


@dataclass(frozen=True)
class Plan:
    name: str
    graph: Graph
    steps: tuple[Step, ...]
    delivery: tuple[Delivery, ...]
    checkpoint: str

    def step(self, node_id: str) -> Step:
        return next(s for s in self.steps if s.node_id == node_id)

    def delivery_of(self, sink_id: str) -> Delivery:
        return next(d for d in self.delivery if d.sink_id == sink_id)
