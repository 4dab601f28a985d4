"""The resolved pipeline graph: typed nodes and edges, independent of YAML.

Front-ends (YAML today, SQL scripts later) produce a `Graph`; everything after
(checks, plan, explain, compile) reads only this.

How a front-end produces a Graph
--------------------------------
`etl.graph.build_graph(pipeline, smap, report, base_dir)` takes

* `pipeline`: an object with `name`, `sources`, `transforms`, `sinks` (lists
  of spec models from `etl.spec`, i.e. the registry's classes), `checkpoint`
  and `dead_letter`. The YAML front-end validates a document into
  `etl.spec.Pipeline`; a SQL front-end (Flink-style `CREATE TABLE ... WITH
  (...)` for sources and sinks, `INSERT INTO sink SELECT ... FROM src WHERE
  ...` for transforms) would construct the same spec models directly:
  `CREATE TABLE` -> a source or sink spec, each `WHERE` -> a `FilterTransform`
  with `expr`, a projection -> a `SelectTransform`, `GROUP BY TUMBLE(...)` ->
  a `WindowTransform`, `JOIN` -> a `JoinTransform`, each with a generated id
  and `inputs` naming the upstream id.
* `smap`: optional; anything with `file`, `value(path) -> Span` and
  `key(path) -> Span`, where `path` is the location of a component in the
  front-end's own document (`("transforms", 2, "expr")` for YAML). A SQL
  front-end maps those paths to statement positions in its script (or passes
  None, and diagnostics point at the component's `Node.span`).

After `build_graph`, `etl.graph.checks.check_graph` fills `columns`, checks
references, regexes, grok patterns, event time and resources, and
`etl.plan.build_plan` turns the Graph into the plan IR. None of these import
YAML or Jinja code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Collection

from etl import registry
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
    # filter id -> its rules (inline and from rule files), each with `.rule` (etl.spec.rules.Rule),
    # `.file` and `.span_of(*keys)` (see etl.load.rules.SourcedRule)
    rules: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    vars: dict[str, Any] = field(default_factory=dict)  # template vars (rule files are rendered with them)
    sigma: dict[str, Any] = field(default_factory=dict)  # filter id -> etl.load.sigma.SigmaStats (explain)
    functions: dict[str, Any] = field(default_factory=dict)  # lower name -> etl.spec.signature.Signature
    inferred: dict[str, Any] = field(default_factory=dict)  # schemaless file source id -> etl.load.infer.Sample

    def node(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def downstream(self, node_id: str) -> list[Node]:
        return [n for n in self.nodes.values() if any(e.src == node_id for e in n.inputs)]

    def upstream_sources(self, node_id: str) -> list[Node]:
        """Every source that feeds `node_id`, directly or not, sorted by id."""
        ups: Collection[str] | None = self._upstream_ids().get(node_id)
        if ups is None:  # on a cycle (reported by build_graph): walk it
            ups = self._walk_upstream(node_id)
        return sorted((self.nodes[i] for i in ups), key=lambda n: n.id)

    def _upstream_ids(self) -> dict[str, frozenset[str]]:
        """Source ids upstream of each node, computed once in topological order (linear for chains:
        a node with one input shares its input's set)."""
        cached = self.__dict__.get("_ups")
        if cached is not None:
            return cached
        ups: dict[str, frozenset[str]] = {}
        empty: frozenset[str] = frozenset()
        for node in self.nodes.values():
            parts: list[frozenset[str]] = []
            for e in node.inputs:
                if e.src not in self.nodes:
                    continue
                if e.src not in ups:  # an input on a cycle: leave this node to the walk
                    break
                parts.append(ups[e.src] | {e.src} if self.nodes[e.src].kind == "source" else ups[e.src])
            else:
                ups[node.id] = parts[0] if len(parts) == 1 else frozenset().union(*parts) if parts else empty
        object.__setattr__(self, "_ups", ups)
        return ups

    def _walk_upstream(self, node_id: str) -> set[str]:
        seen: set[str] = set()
        out: set[str] = set()
        stack = [node_id]
        while stack:
            nid = stack.pop()
            for e in self.nodes[nid].inputs:
                if e.src in seen or e.src not in self.nodes:
                    continue
                seen.add(e.src)
                if self.nodes[e.src].kind == "source":
                    out.add(e.src)
                stack.append(e.src)
        return out

    def of_kind(self, kind: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == kind]

    def input_columns(self, node_id: str) -> list[Columns | None]:
        """Columns of each `input` edge of a node (None where unknown)."""
        return [self.columns_of(e.ref) for e in self.nodes[node_id].inputs if e.role == "input"]

    def columns_of(self, ref: str) -> Columns | None:
        return self.columns.get(ref, self.columns.get(ref.split(".", 1)[0]))


@dataclass(frozen=True)
class Placeholder:
    """Stands in for a component whose spec did not validate, so references to it still resolve.

    Its columns and properties are unknown; checks skip what depends on them."""

    id: str
    type: str
    KIND: str
    inputs: tuple[str, ...] = ()
    labels: tuple[str, ...] | None = None  # route outputs when readable, else None (any label)
    table: str | None = None

    def outputs(self) -> list[str]:
        return list(self.labels or ())

    def input_ids(self) -> list[str]:
        return list(self.inputs)

    def table_input(self) -> str | None:
        return self.table

    def is_static(self) -> bool:
        """As the registered spec class says (a mysql source is always a static table)."""
        entry = registry.entries(self.KIND).get(self.type) if self.KIND in registry.KINDS else None
        return bool(getattr(entry.spec, "STATIC", False)) if entry is not None else False

    def is_replayable(self) -> bool:
        return True

    def is_idempotent(self) -> bool:
        return False

    def output_key(self) -> str | None:
        return None

    def replay_note(self) -> str | None:
        return None


def is_placeholder(spec: Any) -> bool:
    return isinstance(spec, Placeholder)
