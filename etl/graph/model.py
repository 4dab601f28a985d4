"""The resolved pipeline graph: typed nodes and edges, independent of YAML.

Front-ends (YAML today, SQL scripts later) produce a `Graph`; everything after
(checks, plan, explain, compile) reads only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from etl.diagnostics import Span

Columns = tuple[tuple[str, str], ...]  # ((name, spark type), ...) in order


@dataclass(frozen=True)
class Edge:
    src: str  # upstream node id
    dst: str  # downstream node id
    label: str | None = None  # route output label
    role: str = "input"  # "input", or "table" for a lookup's dimension table
    span: Span | None = None  # where the reference is written

    @property
    def ref(self) -> str:
        return f"{self.src}.{self.label}" if self.label else self.src


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # "source" | "transform" | "sink"
    type: str
    spec: Any  # the validated spec model (frozen pydantic)
    span: Span  # where the component is written
    path: tuple = ()  # location in the front-end document, e.g. ("transforms", 2)
    inputs: tuple[Edge, ...] = ()
    outputs: tuple[str, ...] = ()  # route labels; empty for a single output

    def field_span(self, smap: Any, *keys: Any) -> Span:
        return smap.value(self.path + keys) if smap is not None else self.span


@dataclass(frozen=True)
class Graph:
    name: str
    pipeline: Any  # etl.spec.Pipeline (or a SQL front-end's equivalent)
    nodes: dict[str, Node]  # in topological order
    columns: dict[str, Columns | None] = field(default_factory=dict)  # per node (and "id.label")
    smap: Any = None  # source map of the front-end document, for positions
    base_dir: str = "."

    def node(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def downstream(self, node_id: str) -> list[Node]:
        return [n for n in self.nodes.values() if any(e.src == node_id for e in n.inputs)]

    def upstream_sources(self, node_id: str) -> list[Node]:
        """Every source that feeds `node_id`, directly or not."""
        seen: set[str] = set()
        out: list[Node] = []
        stack = [node_id]
        while stack:
            nid = stack.pop()
            for e in self.nodes[nid].inputs:
                if e.src in seen or e.src not in self.nodes:
                    continue
                seen.add(e.src)
                up = self.nodes[e.src]
                if up.kind == "source":
                    out.append(up)
                stack.append(e.src)
        return sorted(out, key=lambda n: n.id)

    def of_kind(self, kind: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == kind]

    def columns_of(self, ref: str) -> Columns | None:
        return self.columns.get(ref, self.columns.get(ref.split(".", 1)[0]))
