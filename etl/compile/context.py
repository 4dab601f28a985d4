"""What every compile function receives and returns.

A source builder is `build(ctx, node) -> DataFrame | Built`; a transform builder
is `build(ctx, node, inputs) -> DataFrame | Built`. Builders are pure functions
of their inputs: the same builder compiles a node over streaming DataFrames and,
inside foreachBatch, over a micro-batch's DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from etl.dead_letters import ERR, PAYLOAD  # noqa: F401  (re-exported)
from etl.diagnostics import Diagnostic, Severity, Span
from etl.graph.model import Graph, Node


class CompileError(Exception):
    """A pipeline that validated but cannot be compiled; points at the YAML line."""

    def __init__(self, message: str, node: Node | None = None, field: str | None = None,
                 hint: str | None = None, code: str = "E400"):
        super().__init__(message)
        self.message = message
        self.node = node
        self.field = field
        self.hint = hint
        self.code = code

    def diagnostic(self, graph: Graph | None) -> Diagnostic:
        span = Span("<pipeline>")
        if self.node is not None:
            span = self.node.span
            if self.field and graph is not None and graph.smap is not None:
                try:
                    span = self.node.field_span(graph.smap, self.field)
                except Exception:  # noqa: BLE001 - a missing position is not worth failing for
                    span = self.node.span
        return Diagnostic(self.code, self.message, span, Severity.ERROR, self.hint)

    def __str__(self) -> str:
        where = f"{self.node.span}: " if self.node is not None else ""
        return f"{where}{self.code} {self.message}" + (f"\n    hint: {self.hint}" if self.hint else "")


def not_supported(node: Node, what: str | None = None) -> CompileError:
    return CompileError(f"{what or f'{node.type} transform'} is not supported by `etl run` yet "
                        f"('{node.id}')", node, hint="it validates, but a later version runs it; "
                        "remove it to run this pipeline now", code="E402")


@dataclass
class Built:
    """A compiled node. `shared`, when set, holds every row with ERR/PAYLOAD columns;
    `out` and `dead` are its two halves."""

    out: Any = None
    outs: dict[str, Any] | None = None  # labelled outputs (route)
    dead: Any = None  # dead-letter rows: etl.dead_letters.COLUMNS
    shared: Any = None
    base: Any = None  # the frame worth caching when several consumers read this node
    dead_stream: Any = None  # dead letters of a root's input rows (streaming): written by a query of their own

    def output(self, label: str | None = None) -> Any:
        if label is None:
            if self.out is None:
                raise KeyError("node has labelled outputs only")
            return self.out
        assert self.outs is not None
        return self.outs[label]

    @property
    def cache_frame(self) -> Any:
        return self.base if self.base is not None else (self.shared if self.shared is not None else self.out)


@dataclass
class CompileContext:
    spark: Any
    graph: Graph
    checkpoint: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def pipeline(self) -> str:
        return self.graph.name

    def resolve(self, path: str) -> str:
        p = Path(path)
        return str(p if p.is_absolute() else (Path(self.graph.base_dir) / p).resolve())

    def event_time(self, node: Node) -> Any:
        """The node's own event_time, else the one declared by its upstream sources (the first)."""
        own = getattr(node.spec, "event_time", None)
        if own is not None:
            return own
        for src in self.graph.upstream_sources(node.id):
            et = getattr(src.spec, "event_time", None)
            if et is not None:
                return et
        return None


def as_built(value: Any) -> Built:
    return value if isinstance(value, Built) else Built(out=value)
