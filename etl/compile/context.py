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

import etl.compile.jvm as jvm
from etl.compile.rules_jvm import Demotions
from etl.dead_letters import ERR, PAYLOAD  # noqa: F401  (re-exported)
from etl.diagnostics import Diagnostic, Report, Severity, Span
from etl.graph.model import Graph, Node
from etl.physical import PhysicalPlan, Target, node_choices, physical_plan, planner_settings
from etl.physical.planner import shared_prefilter
from etl.plan import build_plan


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
    # a root whose last, stateless step runs on each micro-batch (it may change between batches): its query
    # streams `raw` and `tail(batch_df)` is the root's rows of that batch; `out` is the same rows as a streaming
    # frame (with the step as it was when compiled), for streaming consumers
    raw: Any = None
    tail: Any = None

    def output(self, label: str | None = None) -> Any:
        if label is None:
            if self.out is None:
                raise KeyError("node has labelled outputs only")
            return self.out
        assert self.outs is not None
        return self.outs[label]

    @property
    def has_dead(self) -> bool:
        """Does the node have dead letters (without making their frame)?"""
        return self.dead is not None

    @property
    def cache_frame(self) -> Any:
        return self.base if self.base is not None else (self.shared if self.shared is not None else self.out)


@dataclass
class Caches:
    """What compiling keeps between micro-batches (per context), each with its own type."""

    rule_sets: dict[str, Any] = field(default_factory=dict)  # filter id -> RuleSet (etl.compile.rule_programs)
    rule_broadcasts: dict[str, list] = field(default_factory=dict)  # filter or group -> [(digest, broadcast)]
    rule_columns: dict[tuple, tuple] = field(default_factory=dict)  # (filter, digest, session, engines) -> columns
    rule_meta_maps: dict[tuple, tuple] = field(default_factory=dict)  # (filter, id(meta)) -> (meta, its map)
    merged_programs: dict[tuple, tuple] = field(default_factory=dict)  # sibling group -> (digests, merged)
    stream_shared: dict[tuple, Any] = field(default_factory=dict)  # shared passes over streaming frames
    batch_shared: dict[tuple, Any] = field(default_factory=dict)  # shared passes of the micro-batch being built
    replanned: dict[tuple, Any] = field(default_factory=dict)  # (filter, digest, demoted) -> its choices
    conditions: dict[tuple, Any] = field(default_factory=dict)  # (filter, expr, mode) -> its Column (per batch)
    # filter id -> its streaming alert rows with those of `generate: false` rules (what sigma_correlation reads)
    sigma_alerts: dict[str, Any] = field(default_factory=dict)
    correlation_sets: dict[str, Any] = field(default_factory=dict)  # sigma_correlation id -> CorrelationSet
    # filter id -> (its rule files' signature, the reload warnings logged for that version: rule_programs.log_once)
    reload_logged: dict[str, tuple] = field(default_factory=dict)


@dataclass
class CompileContext:
    """`plan`: the logical plan (its filter programs); `physical`: the engines to build (etl.physical), planned
    once, on first use, for this session's target when not given: a run's compile and runtime read that one
    plan (etl.runtime.runner). `demotions`: the rule sets a step budget moved out of the JVM, owned by this
    context (its run's), the planner's Target.demoted when it plans a node again."""

    spark: Any
    graph: Graph
    checkpoint: str = ""
    plan: Any = None
    physical: PhysicalPlan | None = None
    caches: Caches = field(default_factory=Caches)
    demotions: Demotions = field(default_factory=Demotions)
    executed: dict[tuple[str, str], str] = field(default_factory=dict)  # (node, aspect) -> engine built
    trigger: str = "continuous"  # or "available_now" (--once, --drain): windows' timers (windows.native.choose_timers)

    @property
    def pipeline(self) -> str:
        return self.graph.name

    def physical_plan(self) -> PhysicalPlan:
        """The physical plan (planned here, for this session's target, when the context got none)."""
        if self.physical is None:
            if self.plan is None:
                self.plan = build_plan(self.graph, Report(), programs=True)
            self.physical = physical_plan(self.plan, session_target(self.spark))
        return self.physical

    def engine(self, node: Node, aspect: str, program: Any = None) -> str:
        """The engine of a node's aspect: the plan's, or, for a rule program the plan did not see (reloaded) or
        one moved out of the JVM by a step budget, the planner's pick for it now."""
        return self.choices(node, program)[aspect]

    def choices(self, node: Node, program: Any = None) -> dict[str, str]:
        planned = self.physical_plan().node(node.id)
        got = {c.aspect: c.engine for c in planned.choices}
        if program is None:
            return got
        demoted = self.demotions.demoted(program)
        step = self.plan.step(node.id) if self.plan is not None else None
        same = step is not None and getattr(step.program, "digest", None) == program.digest
        if "rules" in got and same and not (got["rules"] in ("rules-jvm", "rules-jvm-multi") and demoted):
            return got
        key = (node.id, program.digest, demoted)
        if key not in self.caches.replanned:
            target = self.physical_plan().target.with_(demoted=self.demotions.frozen())
            self.caches.replanned[key] = {c.aspect: c.engine
                                          for c in node_choices(node, self.graph, program, target)}
        return self.caches.replanned[key]

    def shared_prefilter(self, group: list[Node], programs: tuple) -> str:
        """The prefilter engine of a shared pass: the plan's, or the planner's pick for a regrouped pass."""
        pp = self.physical_plan()
        planned = pp.shared_pass_of(group[0].id)
        steps = {s.node_id: getattr(s.program, "digest", None) for s in self.plan.steps} if self.plan else {}
        if (planned is not None and planned.members == tuple(n.id for n in group)
                and all(steps.get(n.id) == p.digest for n, p in zip(group, programs, strict=True))):
            return planned.prefilter.engine
        return shared_prefilter(tuple(group), programs, self.graph, pp.target).engine

    def built_with(self, node: Node, aspect: str) -> str:
        """The plan's engine of a node's aspect (what `etl explain` shows), recorded as the one its builder builds."""
        engine = self.engine(node, aspect)
        self.record(node.id, aspect, engine)
        return engine

    def record(self, node_id: str, aspect: str, engine: str) -> None:
        """What was built (the run-equals-explain test compares it with the plan)."""
        self.executed[(node_id, aspect)] = engine

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


def session_target(spark: Any) -> Target:
    """The planner's Target for a running session: its master and whether etl's jar is on its class path."""
    on = jvm.available(spark)
    why = "" if on else (jvm.unavailable_reason() or "the session was started without it")
    return planner_settings(master=spark.sparkContext.master, jvm=on, jvm_why=why)


def as_built(value: Any) -> Built:
    return value if isinstance(value, Built) else Built(out=value)
