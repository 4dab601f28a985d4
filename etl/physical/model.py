"""The physical plan: frozen dataclasses of tuples, one engine per node and aspect, with the reason.

`etl explain` prints it and `etl run` executes it (etl.compile translates it);
it is pure data, built by etl.physical.planner from the logical plan and one
`Target` (the settings snapshot), so it never imports pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from etl.physical.target import Target


@dataclass(frozen=True)
class Rejected:
    engine: str
    why: str


@dataclass(frozen=True)
class Choice:
    """The engine picked for one aspect of a node (rules, prefilter, captures, store, window, json ...)."""

    aspect: str
    engine: str
    reason: str
    rejected: tuple[Rejected, ...] = ()
    build: str = ""  # "module:function" of the engine's build function (imported by compile only)


@dataclass(frozen=True)
class NodePlan:
    node_id: str
    kind: str
    type: str
    choices: tuple[Choice, ...]
    query: str = ""  # the query whose plan runs the node ("" for static tables)

    def choice(self, aspect: str) -> Choice | None:
        return next((c for c in self.choices if c.aspect == aspect), None)

    def engine(self, aspect: str) -> str | None:
        c = self.choice(aspect)
        return c.engine if c is not None else None


@dataclass(frozen=True)
class OutputPlan:
    id: str  # sink id, or "dead_letter"
    refs: tuple[tuple[str, str | None, str], ...]  # (node, route label, "out" | "dead")


@dataclass(frozen=True)
class QueryPlan:
    """One streaming query: its root's streaming frame, then `nodes` per micro-batch, written to `outputs`."""

    name: str
    root: str
    nodes: tuple[str, ...]  # evaluated per micro-batch, in order
    outputs: tuple[OutputPlan, ...]
    kind: str = "root"  # "root" | "dead_only" (a root's input rows that failed) | "union" (a sink over several roots)


@dataclass(frozen=True)
class SharedPass:
    """Sibling rule filters on one input, matched in one mapInArrow pass (each row once for all of them)."""

    input: str  # the input's ref ("node" or "node.label")
    members: tuple[str, ...]
    prefilter: Choice


@dataclass(frozen=True)
class PhysicalPlan:
    """`roots`: each graph node's root (etl.physical.grouping.roots, the query it belongs to), and `paces`: (root,
    seconds, aggregate) of the queries a continuous aggregate's `every` paces (etl.physical.grouping.paced_by):
    data the planner found once, which compile and the runtime read (derived from the graph: not compared)."""

    pipeline: str
    target: Target
    nodes: tuple[NodePlan, ...]
    queries: tuple[QueryPlan, ...]
    shared: tuple[SharedPass, ...] = field(default=())
    roots: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    paces: tuple[tuple[str, float, str], ...] = field(default=(), compare=False, repr=False)
    lates: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def _by_id(self) -> dict[str, NodePlan]:
        """The nodes by id: derived from `nodes` on first use, the frozen plan's own cache (it never changes)."""
        return {n.node_id: n for n in self.nodes}

    def node(self, node_id: str) -> NodePlan:
        return self._by_id[node_id]

    def find(self, node_id: str) -> NodePlan | None:
        """The node's plan; None: the plan has no such node."""
        return self._by_id.get(node_id)

    def root_of(self, node_id: str) -> str | None:
        """The root of a graph node, as the planner grouped the queries; None: not planned."""
        return self.roots.get(node_id)

    def paced(self, root: str) -> tuple[float, str] | None:
        """The longest `every` (seconds) of the continuous aggregates a query with this root reads, with the
        aggregate's id: its micro-batches run at most that often; None: no such aggregate."""
        return next(((s, agg) for r, s, agg in self.paces if r == root), None)

    def engine(self, node_id: str, aspect: str) -> str | None:
        return self.node(node_id).engine(aspect)

    def shared_pass_of(self, node_id: str) -> SharedPass | None:
        return next((s for s in self.shared if node_id in s.members), None)

    def choices(self) -> dict[tuple[str, str], str]:
        """(node, aspect) -> engine, for every choice (what a run records and compares)."""
        return {(n.node_id, c.aspect): c.engine for n in self.nodes for c in n.choices}
