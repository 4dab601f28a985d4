"""Logical plan + Target -> PhysicalPlan: one engine per node and aspect, picked by preference, with why.

`physical_plan` walks the graph once: query grouping (etl.physical.grouping),
each node's engines (etl.physical.engines), and the shared passes of sibling
rule filters (two or more filters with rules on one input whose rules run in
Python workers: one mapInArrow pass matches each row for all of them).
`node_choices` is the per-node half, also called by compile when a rule set is
reloaded or demoted while running (its program changed: its engines are
picked again, with the same rules).
"""

from __future__ import annotations

from typing import Any

from etl.diagnostics import Span
from etl.graph.model import Edge, Graph, Node
from etl.physical.engines import Subject, engines
from etl.physical.failing import dead_stream, fails, horizon_root, undecided_of
from etl.physical.lateness import late_rules
from etl.physical.grouping import DEAD_LETTER, group_queries, is_root, paced_by, query_of, roots, stateful, streamed
from etl.physical.model import Choice, NodePlan, PhysicalPlan, Rejected, SharedPass
from etl.physical.target import Target
from etl.graph.realtime import realtime
from etl.components.sinks.file.spec import default_dead_letter
from etl.workercache import WorkerCache


def pick(aspect: str, subject: Subject, target: Target, note: str = "") -> Choice:
    """The first engine of `aspect` that can run the subject; the others, with why they were not taken. In Spark's
    real-time mode an engine of Python workers is taken only when no other can run (etl.graph.realtime refuses it)."""
    found: Any = None
    rejected = []
    ordered = engines(aspect) + tuple(e for e in type(subject.node.spec).ENGINES if e.aspect == aspect)
    ordered = tuple(e for e in ordered if e.name in target.force) + tuple(e for e in ordered if e.name not in target.force)
    if realtime(subject.graph):
        ordered = tuple(e for e in ordered if not e.python) + tuple(e for e in ordered if e.python)
    for e in ordered:
        why = e.can_run(subject, target)
        if found is None and why is None:
            found = e
        elif why is not None:
            rejected.append(Rejected(e.name, why))
    assert found is not None, f"no {aspect} engine can run {subject.node.id}"
    return Choice(aspect, found.name, found.does + (f" ({note})" if note else ""), tuple(rejected), found.build)


def has_rules(node: Node) -> bool:
    return bool(getattr(node.spec, "has_rules", False))  # a filter's rules


def node_choices(node: Node, graph: Graph, program: Any, target: Target) -> tuple[Choice, ...]:
    """The engines of one node (without its shared pass, which `physical_plan` adds)."""
    s = Subject(node, graph, program)
    if has_rules(node) and program is not None:
        return (pick("rules", s, target), pick("prefilter", s, target))
    if node.kind == "sink":
        return sink_choices(s, target)
    out = []
    for aspect in node.spec.engine_aspects():  # the aspects the component asks for (etl.spec.base.Component)
        if aspect == "store":
            from etl.physical.engines import lookup_store

            store, why = lookup_store(s, target)
            if store == "auto":  # the table's size is known only when read (etl.compile.lookups.dimension.choose_store)
                out.append(Choice("store", "auto-at-start", why, (), "etl.compile.lookups.dimension:choose_store"))
                continue
            out.append(pick("store", s, target, why))
        else:
            out.append(pick(aspect, s, target))
    return tuple(out)


def sink_choices(s: Subject, target: Target) -> tuple[Choice, ...]:
    """A sink's engines: its write path, how Spark's writer counts its rows, how jsonl lines are rendered."""
    if realtime(s.graph) and s.node.id != DEAD_LETTER:  # (dead letters: micro-batches, etl.runtime.realtime)
        return (Choice("write", "realtime", "Spark's own sink in real-time mode: each row written as its task reads "
                       "it (etl.runtime.realtime)", (), s.node.spec.REALTIME_WRITER or ""),)
    out = [pick("write", s, target)]
    if out[0].engine == "spark-writer":  # how the write counts its rows (and a stage's failed rows)
        out.append(pick("count", s, target))
    out += [pick(aspect, s, target) for aspect in s.node.spec.engine_aspects()]  # a file sink's jsonl rendering
    return tuple(out)


def dead_letter_plan(graph: Graph, target: Target) -> NodePlan:
    """The dead-letter sink's engines (the pipeline's `dead_letter:` sink, else jsonl files beside the
    checkpoint), picked as a sink's over the dead-letter columns (etl.dead_letters)."""
    import dataclasses

    from etl.dead_letters import COLUMNS

    spec = getattr(graph.pipeline, "dead_letter", None) or default_dead_letter("dead_letters")
    rows = f"{DEAD_LETTER}.rows"
    node = Node(DEAD_LETTER, "sink", spec.type, spec, Span(graph.name), inputs=(Edge(rows, DEAD_LETTER),))
    seen = dataclasses.replace(graph, nodes={**graph.nodes, DEAD_LETTER: node}, columns={**graph.columns, rows: COLUMNS})
    return NodePlan(DEAD_LETTER, "sink", spec.type, sink_choices(Subject(node, seen), target))


def _in_streams(graph: Graph, queries: tuple) -> set[str]:
    """Row-by-row transforms compiled into a streaming plan: those between a root (or a sink over several
    roots) and the root before it."""
    heads = [n for n in graph.nodes.values() if streamed(n) and is_root(n)]
    heads += [graph.node(q.root) for q in queries if q.kind == "union"]
    out: set[str] = set()
    stack = [e.src for n in heads for e in n.inputs if e.role == "input"]
    while stack:
        nid = stack.pop()
        node = graph.node(nid)
        if nid in out or is_root(node):
            continue
        out.add(nid)
        stack.extend(e.src for e in node.inputs if e.role == "input")
    return out


def _spark(node: Node, in_stream: bool, in_batch: str | None, realtime_run: bool = False) -> Choice:
    """Where a node without alternatives runs: in a streaming plan, per micro-batch of a query, or both."""
    if node.kind == "source":
        if not streamed(node):
            return Choice("run", "static-table", "read by the lookups that use it")
        return Choice("run", "spark-stream", f"streaming read ({node.type} source)")
    if is_root(node):
        what = node.spec.STATE_WHY if stateful(node) else "several inputs"
        return Choice("run", "spark-stream", f"in the streaming plan ({what})")
    batch = f"Spark SQL on each micro-batch of query {in_batch}"
    if realtime_run:
        return Choice("run", "spark-stream", "in the streaming plan of the real-time query (etl.runtime.realtime)")
    if in_stream and in_batch:
        return Choice("run", "spark-stream+batch", f"in the streaming plan of the root it feeds, and {batch}")
    if in_stream:
        return Choice("run", "spark-stream", "in the streaming plan of the root it feeds")
    return Choice("run", "spark-batch", batch if in_batch else "Spark SQL (no sink reads it)")


def _input_key(node: Node) -> tuple | None:
    ins = [e for e in node.inputs if e.role == "input"]
    return (ins[0].src, ins[0].label) if len(ins) == 1 else None


def sibling_groups(graph: Graph, python_rules: set[str]) -> list[tuple[Node, ...]]:
    """Filters with rules run by Python workers, grouped by their one input (groups of two or more)."""
    groups: dict[tuple, list[Node]] = {}
    for n in graph.nodes.values():
        key = _input_key(n)
        if n.id in python_rules and key is not None:
            groups.setdefault(key, []).append(n)
    return [tuple(g) for g in groups.values() if len(g) >= 2]


_MERGED: WorkerCache[tuple, Any] = WorkerCache("MergedPrograms by member digests", 16)  # a pure function of them


def merged(programs: tuple) -> Any:
    """The MergedProgram of a shared pass's members (etl.optimize.merge_programs), once per member digests:
    the planner reads its literals, compile ships it."""
    from etl.optimize import merge_programs

    key = tuple(p.digest for p in programs)
    if key not in _MERGED:
        _MERGED[key] = merge_programs(list(programs))
    return _MERGED[key]


def shared_prefilter(members: tuple[Node, ...], programs: tuple, graph: Graph, target: Target) -> Choice:
    """The prefilter of a shared pass: only when every member keeps (drop and tag members see every row)."""
    if not all(n.spec.mode == "keep" for n in members):
        return Choice("prefilter", "no-prefilter", "every row goes to the matcher",
                      (Rejected("prefilter-jvm", "not every member keeps matching rows (drop and tag see every "
                                                 "row)"),))
    return pick("prefilter", Subject(members[0], graph, merged(programs).program), target,
                "the merged program's literals")


def physical_plan(plan: Any, target: Target) -> PhysicalPlan:
    """The physical plan of a logical plan (etl.plan.Plan, with its filter programs compiled) for `target`."""
    graph = plan.graph
    programs = {s.node_id: s.program for s in plan.steps if s.program is not None}
    engines = {n.id: node_choices(n, graph, programs.get(n.id), target) for n in graph.nodes.values()}
    python_rules = {nid for nid, cs in engines.items() if any(c.engine == "rules-python" for c in cs)}
    groups = sibling_groups(graph, python_rules)
    undecided = {nid: undecided_of(p) for nid, p in programs.items()}
    for members in groups:  # a shared pass may leave a row undecided for all when one program may
        for m in members:
            undecided[m.id] = any(undecided_of(programs[x.id]) for x in members)
    failing = frozenset(n.id for n in graph.nodes.values() if streamed(n) and fails(
        n, graph, {c.aspect: c.engine for c in engines[n.id]}, undecided.get(n.id, False)))
    horizons = {n.id: r for n in graph.nodes.values() if streamed(n) and (r := horizon_root(n, graph)) is not None}
    known = roots(graph)
    queries = group_queries(graph, failing, frozenset(n.id for n in graph.nodes.values()
                                                      if dead_stream(n, graph, horizons.get(n.id))), horizons, known)
    in_stream = _in_streams(graph, queries)
    in_batch = {nid: q.name for q in queries if q.kind == "root" for nid in q.nodes}
    nodes: dict[str, NodePlan] = {}
    for node in graph.nodes.values():
        # a node with engines of its own is described by them; a source also says how it is read (its reader), a
        # parse how it parses (its parser)
        run = (_spark(node, node.id in in_stream, in_batch.get(node.id), realtime(graph)),)
        choices = (run + engines[node.id]) if node.spec.RUN_WITH_ENGINES else (engines[node.id] or run)
        nodes[node.id] = NodePlan(node.id, node.kind, node.type, choices,
                                  in_batch.get(node.id, query_of(graph, node, known)))
    if any(o.id == DEAD_LETTER for q in queries for o in q.outputs):
        nodes[DEAD_LETTER] = dead_letter_plan(graph, target)
    shared = []
    for members in groups:
        pre = shared_prefilter(members, tuple(programs[m.id] for m in members), graph, target)
        ins = [e for e in members[0].inputs if e.role == "input"]
        shared.append(SharedPass(ins[0].ref, tuple(m.id for m in members), pre))
        for m in members:
            rules = nodes[m.id].choice("rules")
            assert rules is not None
            others = ", ".join(x.id for x in members if x is not m)
            rules = Choice("rules", rules.engine, rules.reason + f"; one shared pass with {others}", rules.rejected,
                           rules.build)
            nodes[m.id] = NodePlan(m.id, m.kind, m.type, (rules, pre), nodes[m.id].query)
    windows = {nid: e for nid, cs in engines.items() for c in cs if c.aspect == "window" and (e := c.engine)}
    return PhysicalPlan(graph.name, target, tuple(nodes.values()), queries, tuple(shared), known, _paces(graph),
                        late_rules(graph, windows))


def _paces(graph: Graph) -> tuple[tuple[str, float, str], ...]:
    """(node, seconds, aggregate) for each node a continuous aggregate's `every` paces as a query's root
    (etl.physical.grouping.paced_by): the nodes a query evaluates between its root and its outputs have one input
    each and read only the root's rows, so its root decides its micro-batches' pace."""
    paced = _reads_a_pace(graph)
    return tuple((nid, *got) for nid in graph.nodes if nid in paced and (got := paced_by(graph, nid)) is not None)


def _reads_a_pace(graph: Graph) -> set[str]:
    """The nodes with a continuous aggregate's `every` at or upstream of them, in one pass (paced_by, which walks a
    node's whole upstream, runs only for them: a graph without `every` costs linear time, not quadratic)."""
    out: set[str] = set()
    down: dict[str, list[str]] = {}
    for node in graph.nodes.values():
        for e in node.inputs:
            down.setdefault(e.src, []).append(node.id)
    stack = [nid for nid, node in graph.nodes.items()
             if node.kind == "transform" and node.spec.paced_every() is not None]
    while stack:
        nid = stack.pop()
        if nid not in out:
            out.add(nid)
            stack.extend(down.get(nid, ()))
    return out
