"""Query grouping: one streaming query per root, the nodes each evaluates per micro-batch, its outputs.

A *root* is a node whose frame must be streaming: a source, a stateful
transform (window, sigma_correlation, dedupe, join, temporal_join, lookup, aggregate, a continuous top_n) or a node with several inputs. Every
other transform has one input and works row by row, inside foreachBatch on the
micro-batch of its root. Sinks hanging off one root share its query; a sink
reading several roots gets a query of its own over their union. The dead
letters of failing stages (etl.physical.failing) are one more output of their
root's query; a window's failed input rows get a query of their own.
"""

from __future__ import annotations

from collections.abc import Mapping

from etl.graph.model import Graph, Node
from etl.physical.model import OutputPlan, QueryPlan

def stateful(node: Node) -> bool:
    """Does the node keep state across micro-batches (its spec's is_stateful(), etl.spec.base.Component)?"""
    return node.spec.is_stateful()


def is_root(node: Node) -> bool:
    return node.kind == "source" or stateful(node) or len([e for e in node.inputs if e.role == "input"]) != 1


def roots(graph: Graph) -> dict[str, str]:
    """Each node's root, in one pass over the graph's topological order (the planner's, kept in its plan:
    PhysicalPlan.roots)."""
    got: dict[str, str] = {}
    for node in graph.nodes.values():
        src = node.inputs[0].src if node.inputs else None
        got[node.id] = node.id if is_root(node) or src not in got else got[src]
    return got


def root_of(graph: Graph, node_id: str, known: Mapping[str, str] | None = None) -> str:
    """The node's root: from `known` (roots(graph), computed once by the caller), else computed here."""
    got = (roots(graph) if known is None else known).get(node_id)
    if got is not None:
        return got
    node = graph.node(node_id)  # a node the graph did not list in order (on a cycle)
    while not is_root(node):
        node = graph.node(node.inputs[0].src)
    return node.id


def chain(graph: Graph, root: str, refs: list[str]) -> tuple[str, ...]:
    """The nodes between `root` and the nodes `refs` (graph order), evaluated per micro-batch."""
    needed: set[str] = set()
    stack = list(refs)
    while stack:
        nid = stack.pop()
        if nid == root or nid in needed:
            continue
        needed.add(nid)
        stack.extend(e.src for e in graph.node(nid).inputs if e.role == "input")
    pos = positions(graph)
    return tuple(sorted(needed, key=pos.__getitem__))


def positions(graph: Graph) -> dict[str, int]:
    """Each node's index in the graph's (topological) order."""
    return {nid: i for i, nid in enumerate(graph.nodes)}


def streamed(node: Node) -> bool:
    """Is the node compiled over streaming frames? (sinks are written, static tables read by their lookups)"""
    return not (node.kind == "sink" or (node.kind == "source" and node.spec.is_static()))


DEAD_LETTER = "dead_letter"
HORIZON = "horizon"  # a ref's part: the node's input rows beyond its declared event time's horizon


def needs(graph: Graph, node: str, part: str) -> list[str]:
    """The nodes a query evaluates per micro-batch for an output's ref to `node`'s `part`: the node, or for a
    HORIZON ref its inputs (the node itself runs in its own query's streaming plan)."""
    return [e.src for e in graph.node(node).inputs if e.role == "input"] if part == HORIZON else [node]


def group_queries(graph: Graph, failing: frozenset[str] = frozenset(),
                  dead_streams: frozenset[str] = frozenset(),
                  horizons: dict[str, str] | None = None,
                  known: Mapping[str, str] | None = None) -> tuple[QueryPlan, ...]:
    """The queries, in graph order of their roots: the sinks' and the dead letters of the `failing` stages and of
    the `horizons` (node -> the root whose query finds its input rows beyond its event time's horizon). `known`:
    roots(graph), when the caller has it."""
    horizons = horizons or {}
    known = roots(graph) if known is None else known
    groups: dict[str, list[OutputPlan]] = {}
    queries: list[QueryPlan] = []
    for node in graph.nodes.values():
        if not streamed(node):
            continue
        if node.id in dead_streams:
            queries.append(QueryPlan(f"{node.id}-dead_letters", node.id, (),
                                     (OutputPlan(DEAD_LETTER, ((node.id, None, "dead"),)),), "dead_only"))
        if node.id in horizons:
            groups.setdefault(horizons[node.id], []).append(OutputPlan(DEAD_LETTER, ((node.id, None, HORIZON),)))
        if node.id in failing:
            groups.setdefault(root_of(graph, node.id, known), []).append(
                OutputPlan(DEAD_LETTER, ((node.id, None, "dead"),)))
    for sink in graph.of_kind("sink"):
        refs = tuple((e.src, e.label, "out") for e in sink.inputs if e.role == "input")
        heads = {root_of(graph, r[0], known) for r in refs}
        if len(heads) == 1:
            groups.setdefault(heads.pop(), []).append(OutputPlan(sink.id, refs))
        else:
            queries.append(QueryPlan(sink.id, sink.id, (), (OutputPlan(sink.id, ((sink.id, None, "out"),)),),
                                     "union"))
    for root, outputs in groups.items():
        dead = tuple(r for o in outputs if o.id == DEAD_LETTER for r in o.refs)
        merged = [o for o in outputs if o.id != DEAD_LETTER] + ([OutputPlan(DEAD_LETTER, dead)] if dead else [])
        queries.append(QueryPlan(root, root, chain(graph, root, [n for o in merged for r in o.refs
                                                                 for n in needs(graph, r[0], r[2])]), tuple(merged)))
    pos = positions(graph)
    queries.sort(key=lambda q: pos.get(q.root, len(pos)))
    return tuple(queries)


def query_of(graph: Graph, node: Node, known: Mapping[str, str] | None = None) -> str:
    """The query whose micro-batch (or streaming plan, for a root) computes `node` (`known`: roots(graph))."""
    if node.kind == "sink":
        heads = {root_of(graph, e.src, known) for e in node.inputs if e.role == "input"}
        return heads.pop() if len(heads) == 1 else node.id
    return root_of(graph, node.id, known) if streamed(node) else ""


def paced_by(graph: Graph, root: str, nodes: tuple[str, ...] | list[str] = ()) -> tuple[float, str] | None:
    """The longest `every` (seconds) of the continuous aggregates a query reads (its root, the nodes it evaluates
    and everything upstream of them), with the aggregate's id: the query's micro-batches run at most that often,
    so each of its keys has at most one row per `every` (one row per changed key per micro-batch)."""
    seen: set[str] = set()
    stack = [root, *nodes]
    best: tuple[float, str] | None = None
    while stack:
        nid = stack.pop()
        if nid in seen or nid not in graph.nodes:
            continue
        seen.add(nid)
        node = graph.nodes[nid]
        every = node.spec.paced_every() if node.kind == "transform" else None
        if every is not None and (best is None or float(every) > best[0]):
            best = (float(every), nid)
        stack.extend(e.src for e in node.inputs)
    return best
