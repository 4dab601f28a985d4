"""Physical plan -> PySpark: streaming DataFrames per node, one query per root, as etl.physical grouped them.

The physical plan (etl.physical) names the queries: a root (a source, a
stateful transform, a node with several inputs) is compiled over streaming
frames; the row-by-row transforms after it run inside foreachBatch on its
micro-batch. Sinks hanging off one root share its query: its source is read
once per micro-batch, intermediate frames read by several outputs are cached
for the batch, and every sink commits that batch id idempotently. Each node is
built with the engines the plan picked (`CompileContext.engine`); what was
built is recorded (`CompileContext.executed`). A root may run its last, stateless step on each
micro-batch (`Built.tail`, e.g. sigma_correlation's condition, which a reload can change): its query streams
`Built.raw` and the batch's root rows are `tail(batch)`. Dead-letter outputs are added to
the query of the failing stage's root, as the builders report them. Each
transform's rows out are observed by the one query that counts it
(etl.compile.counts; `Query.counted`, `Batch.rows_out`).
"""

from __future__ import annotations

from collections import Counter
from contextlib import nullcontext
from functools import partial
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from etl import registry
from etl.compile import counts, jcalls
from etl.compile.context import Built, CompileContext, CompileError, as_built, not_supported
from etl.compile.deadletter import SplitBuilt, carried, carrying, from_shared
from etl.compile.guard import guarding
from etl.compile.watermark import beyond_rows, bound_declared
from etl.compile.unions import union_by_name
from etl.graph.model import Node
from etl.physical.grouping import HORIZON, chain, is_root, needs, root_of, streamed

__all__ = ["Built", "CompileContext", "CompileError", "Compiler", "Output", "Query", "is_root"]

DEAD_LETTER = "dead_letter"


@dataclass(frozen=True)
class Ref:
    node: str
    label: str | None = None
    part: str = "out"  # "out" or "dead"


@dataclass
class Output:
    id: str  # sink id, or "dead_letter"
    refs: tuple[Ref, ...]
    spec: Any = None  # the sink spec (None for the dead-letter output: the runtime picks the sink)

    @property
    def is_dead_letter(self) -> bool:
        return self.id == DEAD_LETTER


@dataclass
class Query:
    name: str
    root: str
    stream: Any  # the root's streaming DataFrame
    outputs: list[Output]
    nodes: list[str] = field(default_factory=list)  # evaluated per micro-batch, in order
    root_shared: bool = False  # the stream carries ERR/PAYLOAD (a source with dead letters)
    dead_only: bool = False  # the stream is the root's `dead_stream` (rows of its input that failed)
    counted: tuple[str, ...] = ()  # transforms whose rows out this query's batches count (etl.compile.counts)
    tail: Any = None  # the root's last step, run on each micro-batch (Built.tail)


class Compiler:
    def __init__(self, ctx: CompileContext, sources: dict[str, Callable[[CompileContext, Node], Any]] | None = None):
        self.ctx = ctx
        self.graph = ctx.graph
        self.source_override = sources or {}
        self._stream: dict[str, Built] = {}
        self._claims: dict[str, tuple[str, bool]] | None = None
        self._horizons: dict[str, str] | None = None
        self._carriers: dict[str, str | None] = {}
        if self.graph.functions:  # the pipeline's Python functions, callable from its expressions
            from etl.compile.functions import register

            register(ctx.spark, self.graph)

    # ------------------------------------------------------------ builders
    def builder(self, node: Node) -> Callable[..., Any]:
        if node.kind == "source" and node.id in self.source_override:
            return self.source_override[node.id]
        entry = registry.lookup(node.kind, node.type)
        try:
            return entry.load_builder()
        except (ImportError, AttributeError, LookupError):
            raise not_supported(node, f"{node.kind} type '{node.type}'") from None

    def _call(self, node: Node, inputs: list[Any]) -> Built:
        fn = self.builder(node)
        try:
            return as_built(fn(self.ctx, node) if node.kind == "source" else fn(self.ctx, node, inputs))
        except CompileError:
            raise
        except Exception as e:  # Spark analysis errors: unknown column, SQL syntax, type mismatch
            from pyspark.errors import PySparkException

            if isinstance(e, PySparkException):
                msg = str(e).strip().splitlines()[0].split(" SQLSTATE:")[0]
                raise CompileError(f"{node.type} '{node.id}': {msg}", node, code="E400",
                                   hint="check the expression and the columns of its input") from None
            raise

    def stream(self, node_id: str) -> Built:
        """The node compiled over streaming DataFrames (memoized)."""
        if node_id not in self._stream:
            node = self.graph.node(node_id)
            inputs = [self.stream(e.src).output(e.label) for e in node.inputs if e.role == "input"]
            inputs, beyond = bound_declared(self.graph, self.ctx.pipeline, node, inputs)  # a transform's event time
            built = self._call(node, inputs)
            if beyond is not None and node_id not in self.horizons:  # (a query of their own: etl.physical.failing.
                # dead_stream; else its input root's query finds them on each micro-batch: beyond_rows)
                built.dead_stream = beyond if built.dead_stream is None else built.dead_stream.unionByName(beyond)
            if node.kind == "transform" and self.claims.get(node_id, ("", False))[1]:
                built = counts.observe_stream(built, node_id)
            self._stream[node_id] = built
        return self._stream[node_id]

    @property
    def horizons(self) -> dict[str, str]:
        """node -> the root whose query writes the node's input rows beyond its event time's horizon (etl.physical.
        failing.horizon_root), as the physical plan's outputs say (read once)."""
        if self._horizons is None:
            self._horizons = {r[0]: q.root for q in self.ctx.physical_plan().queries for o in q.outputs
                              for r in o.refs if r[2] == HORIZON}
        return self._horizons

    def _counted(self, query: str) -> tuple[str, ...]:
        """The transforms whose rows out `query` counts (etl.compile.counts.claims), in graph order."""
        return tuple(n for n, (q, _) in self.claims.items() if q == query)

    @property
    def claims(self) -> dict[str, tuple[str, bool]]:
        """transform -> (the query counting its rows out, in its streaming plan?); empty when the physical plan's
        target says ETL_COMPONENT_COUNTS=off."""
        if self._claims is None:
            pp = self.ctx.physical_plan()
            self._claims = counts.claims(self.graph, pp.queries) if pp.target.component_counts else {}
        return self._claims

    # ------------------------------------------------------------- queries
    def root_of(self, node_id: str) -> str:
        """The node's root, as the physical plan grouped the queries."""
        return self.ctx.physical_plan().root_of(node_id) or root_of(self.graph, node_id)

    def queries(self) -> list[Query]:
        """The physical plan's queries, each node compiled with its engines, plus the dead-letter outputs."""
        groups: dict[str, list[Output]] = {}
        queries: list[Query] = []
        horizons = self.horizons
        for node in self.graph.nodes.values():
            if not streamed(node):
                # a static table only feeds lookups, which read it themselves (a malformed row fails the
                # table's load); no streaming pass over it, no dead-letter query
                continue
            built = self.stream(node.id)
            if built.dead_stream is not None:
                name = f"{node.id}-dead_letters"
                queries.append(Query(name, node.id, built.dead_stream, [Output(DEAD_LETTER, (Ref(node.id, None, "dead"),))],
                                     dead_only=True, counted=self._counted(name)))
            if node.id in horizons:
                groups.setdefault(horizons[node.id], []).append(Output(DEAD_LETTER, (Ref(node.id, None, HORIZON),)))
            if built.dead is not None:
                groups.setdefault(self.root_of(node.id), []).append(Output(DEAD_LETTER, (Ref(node.id, None, "dead"),)))
        for qp in self.ctx.physical_plan().queries:  # the sinks' outputs (the builders above told the dead letters)
            outputs = [Output(o.id, tuple(Ref(*r) for r in o.refs), self.graph.node(o.id).spec) for o in qp.outputs
                       if o.id != DEAD_LETTER]
            if not outputs:
                continue
            if qp.kind == "union":  # inputs from several roots: the sink gets its own query over their union
                sink = self.graph.node(qp.root)
                stream = union_by_name([self.stream(e.src).output(e.label) for e in sink.inputs if e.role == "input"])
                queries.append(Query(qp.name, qp.root, stream, outputs, counted=self._counted(qp.name)))
            else:
                groups.setdefault(qp.root, []).extend(outputs)
        for root, outputs in groups.items():
            dead = [r for o in outputs if o.is_dead_letter for r in o.refs]
            merged = [o for o in outputs if not o.is_dead_letter]
            if dead:
                merged.append(Output(DEAD_LETTER, tuple(dead)))
            built = self.stream(root)
            shared = built.shared is not None
            tail = built.tail if not shared and built.raw is not None else None
            stream = built.shared if shared else built.raw if tail is not None else built.out
            nodes = list(chain(self.graph, root, [n for o in merged for r in o.refs
                                                  for n in needs(self.graph, r.node, r.part)]))
            queries.append(Query(root, root, stream, merged, nodes, shared, counted=self._counted(root), tail=tail))
        order = list(self.graph.nodes)
        queries.sort(key=lambda q: order.index(q.root) if q.root in order else len(order))
        return queries

    # ----------------------------------------------------- per micro-batch
    def evaluate(self, query: Query, batch_df: Any,  # noqa: C901 - refactored after issue 39's move (one planner)
                 can_split: Callable[[str], bool] = lambda output_id: False, dead_expected: bool = True) -> Batch:
        """Frames for each output of `query` over one micro-batch.

        `dead_expected` False (the query's last batch had no dead letters): a source's stage whose failed rows the
        sinks' pass counts (DeadCounts) is not cached for its dead letters, which a clean batch never reads (a
        batch that has some reads the source's micro-batch again), when the source reads a batch again exactly
        (REREADS_EXACTLY: offsets, a seeded generator; a file may have changed, so its batch is cached).

        When a sink reads a failing stage's good rows directly and the same query writes that
        stage's dead letters, the sink gets the stage's shared frame (ERR/PAYLOAD included) and
        splits it while writing (`splits`): the stage runs once, nothing is cached for it."""
        built: dict[str, Built] = {}
        carrier = self.carrier(query)
        seen = counts.DeadCounts()  # the failed rows of each stage whose dead letters are a frame of this batch
        if query.dead_only:
            built[query.root] = Built(dead=batch_df)
        elif query.root_shared:
            built[query.root] = from_shared(batch_df, self.ctx.pipeline, query.root)
            built[query.root].base = batch_df
            if not carrier:
                seen.watch(built[query.root], query.root)
        else:
            built[query.root] = Built(out=batch_df if query.tail is None else query.tail(batch_df))
        shared = self.ctx.caches.batch_shared  # passes shared by sibling rule filters (filter.py)
        shared.clear()
        # rows out of the stages this batch evaluates (etl.compile.counts); a stage only outputs read is observed
        # once the splits are known (a split write computes its shared frame, not its `out`)
        observed = counts.BatchCounts() if query.counted and not query.dead_only else None
        per_batch = [n for n in ([query.root] if query.root_shared or query.tail is not None else []) + query.nodes
                     if n in query.counted]
        consumed = {e.src for nid in query.nodes for e in self.graph.node(nid).inputs}
        if observed is not None and query.root in per_batch and query.root in consumed:
            observed.observe(built[query.root], query.root)
        dead_nodes = {r.node for o in query.outputs if o.is_dead_letter for r in o.refs if r.part != HORIZON}
        read = {r.node for o in query.outputs if not o.is_dead_letter for r in o.refs}
        read |= {e.src for nid in query.nodes for e in self.graph.node(nid).inputs}
        read |= {n for o in query.outputs for r in o.refs if r.part == HORIZON
                 for n in needs(self.graph, r.node, r.part)}
        # a stage only its dead letters read here (its rows go on in another query's streaming plan) finds its
        # failing rows only when guarded: no sink's pass would throw on them (etl.compile.guard)
        with guarding(True) if dead_nodes - read else nullcontext():
            for nid in query.nodes:
                node = self.graph.node(nid)
                got = self._carry(node, query.root, batch_df) if nid == carrier else None
                if got is None:
                    if nid == carrier:  # (its builder did not keep the carried columns: the source is cached)
                        carrier = self._carriers[query.name] = None
                    inputs = [built[e.src].output(e.label) for e in node.inputs if e.role == "input"]
                    got = self._call(node, inputs)
                built[nid] = got
                if nid in dead_nodes and nid != carrier:
                    seen.watch(got, nid)
                if observed is not None and nid in per_batch and nid in consumed:
                    observed.observe(built[nid], nid)
        splits: dict[str, str] = {}
        for o in query.outputs:
            if o.is_dead_letter or len(o.refs) != 1:
                continue
            r = o.refs[0]
            if (r.part == "out" and r.label is None and r.node in dead_nodes and r.node not in splits.values()
                    and built[r.node].shared is not None and can_split(o.id)):
                splits[o.id] = r.node
        for nid in splits.values():
            seen.unwatch(built[nid], nid)
        if observed is not None:
            for nid in per_batch:
                if nid not in consumed and nid not in splits.values():
                    observed.observe(built[nid], nid)
        uses: Counter[str] = Counter()
        # a clean last batch: the next one's dead letters may read its micro-batch again, when that gives the same rows
        rereads = query.root_shared and bool(getattr(registry.traits_of(self.graph.node(query.root).spec),
                                                     "REREADS_EXACTLY", False))
        for nid in query.nodes:
            for e in self.graph.node(nid).inputs:
                uses[e.src] += 1
        for o in query.outputs:
            for r in o.refs:
                if r.part == HORIZON:  # its node's inputs, read once more (beyond_rows)
                    uses.update(needs(self.graph, r.node, r.part))
                elif o.is_dead_letter and r.part == "dead" and (not built[r.node].has_dead or not dead_expected and
                                                                 rereads and r.node in seen.observations):
                    continue  # no dead letters (a stage evaluated unguarded), or counted by the sinks' pass
                elif not (o.is_dead_letter and (r.node in splits.values() or r.node == query.root and carrier)):
                    uses[r.node] += 1
        cached = []
        for entry in shared.values():
            if len(entry.users) >= 2:  # several filters read one shared pass: each row is matched once
                uses[entry.input_node] -= len(entry.users) - 1
                cached.append(jcalls.persist(entry.frame))
        shared.clear()
        for nid, n in uses.items():
            frame = built[nid].cache_frame if nid in built else None
            if n >= 2 and frame is not None:
                cached.append(jcalls.persist(frame))
        frames: dict[str, Any] = {}
        lazy: dict[str, Callable[[], Any]] = {}
        for o in query.outputs:
            if o.id in splits:
                node_id = splits[o.id]
                frames[o.id] = built[node_id].shared if observed is None or node_id not in per_batch else \
                    observed.observe_split(built[node_id].shared, node_id)
                continue
            refs = [r for r in o.refs
                    if not (o.is_dead_letter and (r.node in splits.values() or r.node == query.root and carrier))]
            if o.is_dead_letter and all(r.part == "dead" for r in refs):  # made when read (Batch.frame): not when
                # the sinks' pass counted none (DeadCounts), no planning and no round trip for them
                kept = [r.node for r in refs if built[r.node].has_dead]  # (unguarded stages have none)
                seen.parts = list(kept)
                lazy[o.id] = partial(_dead_letters, built, kept)
                continue
            parts = [(r, self._beyond(r.node, built) if r.part == HORIZON else built[r.node].dead if r.part == "dead"
                      else built[r.node].output(r.label)) for r in refs]
            parts = [(r, p) for r, p in parts if p is not None]  # a stage evaluated unguarded has no dead letters
            if not parts:
                frames[o.id] = None
                continue
            frames[o.id] = union_by_name([p for _, p in parts])
            if o.is_dead_letter:  # none in the batch when every part's count, taken by the sinks' pass, is 0 (a
                # stage evaluated unguarded is no part: a failing row would have failed the batch, retried guarded)
                seen.parts = [r.node if r.part == "dead" else None for r, _ in parts]
        return Batch(frames, cached, splits, built, observed, {carrier: query.root} if carrier else {}, seen, lazy)

    def carrier(self, query: Query) -> str | None:
        """The stage that carries `query`'s source's failed rows to its own dead letters (etl.compile.deadletter.
        carrying), or None: the source's one reader in the query, a transform that CARRIES_FAILED_ROWS with
        on_error dead_letter, when the query writes the source's dead letters and nothing else reads its rows."""
        if query.name not in self._carriers:
            self._carriers[query.name] = self._find_carrier(query)
        return self._carriers[query.name]

    def _find_carrier(self, query: Query) -> str | None:
        root = query.root
        if not query.root_shared or query.tail is not None:
            return None
        dead = [r for o in query.outputs if o.is_dead_letter for r in o.refs]
        if not any(r.node == root and r.part == "dead" for r in dead):
            return None
        if any(r.node == root for o in query.outputs if not o.is_dead_letter for r in o.refs) or any(
                root in needs(self.graph, r.node, r.part) for r in dead if r.part == HORIZON):
            return None
        readers = [(nid, e) for nid in query.nodes for e in self.graph.node(nid).inputs if e.src == root]
        if len(readers) != 1:
            return None
        nid, edge = readers[0]
        node = self.graph.node(nid)
        ok = (edge.role == "input" and edge.label is None and len(node.inputs) == 1
              and getattr(node.spec, "CARRIES_FAILED_ROWS", False) and node.spec.on_error == "dead_letter"
              and any(r.node == nid and r.part == "dead" for r in dead))
        return nid if ok else None

    def _carry(self, node: Node, source: str, shared: Any) -> Built | None:
        """`node` (the carrier) over the source's micro-batch, the source's failed rows carried to its dead letters;
        None when its builder did not keep the carried columns."""
        built = self._call(node, [carrying(shared)])
        whole = carried(built.shared) if built.shared is not None else None
        return None if whole is None else SplitBuilt(self.ctx.pipeline, node.id, source, shared=whole)

    def _beyond(self, node_id: str, built: dict[str, Built]) -> Any:
        """The dead letters of `node_id`'s input rows in this micro-batch beyond its event time's horizon."""
        node = self.graph.node(node_id)
        return beyond_rows(self.ctx.pipeline, node, [built[e.src].output(e.label) for e in node.inputs
                                                     if e.role == "input"])


def _dead_letters(built: dict[str, Built], stages: list[str]) -> Any:
    """The dead letters of `stages` in one micro-batch (None: no stage)."""
    return union_by_name([built[n].dead for n in stages]) if stages else None


@dataclass
class Batch:
    frames: dict[str, Any]  # output id -> DataFrame (None: nothing left to compute for it)
    cached: list[Any]  # frames persisted for this micro-batch: unpersist afterwards
    splits: dict[str, str] = field(default_factory=dict)  # output id -> stage whose dead letters it yields
    built: dict[str, Built] = field(default_factory=dict)  # node id -> its frames in this batch (etl tap)
    observed: counts.BatchCounts | None = None  # rows out of the stages it evaluates (etl.compile.counts)
    carried: dict[str, str] = field(default_factory=dict)  # stage -> the source whose failed rows it carries
    dead_counts: counts.DeadCounts | None = None  # the dead-letter frame's rows, counted by the sinks' pass
    lazy: dict[str, Callable[[], Any]] = field(default_factory=dict)  # output id -> its frame, made when read

    def frame(self, output: str) -> Any:
        """The frame of one output (None: nothing to compute for it), made now if it is made when read."""
        if output in self.lazy:
            self.frames[output] = self.lazy.pop(output)()
        return self.frames.get(output)

    def rows_out(self) -> dict[tuple[str, str | None], int]:
        """Rows out of each stage (and label) some write computed: read once the sinks have written."""
        return self.observed.collect() if self.observed is not None else {}
