"""Filter rule programs on the driver: compiled once, shipped once, reloaded between micro-batches.

A filter with rules gets one `RuleSet` per compile context. It holds the
current FilterProgram (from the plan, else compiled here) and, when the filter
reads `rule_files` and `reload` is on (the default), re-checks those files
before every micro-batch:

* what is compared: the files the `rule_files` entries name now (globs are
  expanded again, so new and deleted files count) with their mtime and size;
* on a change the files are loaded and validated like `etl validate` does
  (YAML, rule schema, duplicate ids, regexes, networks) and compiled; any
  error rejects the change: every diagnostic is logged (`etl.rules` logger,
  WARNING, `file:line:col CODE message`) and the old rules stay in force;
  fixing the file is picked up the same way;
* a valid change swaps the program: the next micro-batch's frames are built
  with the new one (filters run inside foreachBatch, so each micro-batch
  builds its mapInArrow anew, on the driver).

Shipping: a program is put in one Spark broadcast variable per program digest
(`ship`): the mapInArrow function only captures the digest and the broadcast
handle, so it pickles small for every micro-batch; Spark sends the program to
each executor once, and each Python worker unpickles it on first use and keeps
its loaded Matcher (Hyperscan databases and scratch) per digest. This works
the same on local[*] and on a cluster (no shared file system needed).

Limits: the check runs between micro-batches, so a change is seen by the
micro-batch that starts after it (a batch in flight finishes with the old
rules). A big rule set is compiled synchronously, at the start of that batch
(about 15-20 s for 10,000 regexes the first time; the on-disk cache of
etl.diskcache makes an already-seen rule set instant). Inline `rules`
in the pipeline file are not reloaded (a pipeline change needs a restart), and
neither are filters whose frame is part of a streaming plan itself rather
than of a micro-batch (a filter feeding a sink together with inputs from
other sources, directly): they keep the rules they started with.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.components.transforms.filter.alerts import rule_meta
from etl.diagnostics import Report
from etl.graph.checks import check_rule_list
from etl.graph.model import Node
from etl.load.rules import RuleFilesWatch, check_duplicate_ids, load_rule_files, rule_files_signature
from etl.load.sigma import SigmaStats, load_sigma
from etl.load.sigma_corr import silent
from etl.spec.sigma import missing_fields

log = logging.getLogger("etl.rules")

_KEEP_BROADCASTS = 2  # per filter: the current program's and the one before (a batch may still be running)


def optimizer(node: Node) -> Any:
    """The etl.optimize package, or a CompileError (E403) naming the filter when it cannot be imported."""
    try:
        import etl.optimize as opt
        from etl.matching import matcher as _matcher  # noqa: F401  (the workers need it)
    except ImportError as e:
        raise CompileError(f"filter '{node.id}' uses rules, but the filter optimizer (etl.optimize.compile_rules, "
                           f"etl.matching.matcher) cannot be imported: {e}", node, "rules", code="E403",
                           hint="use `expr` for now, or install etl with its optimizer dependencies") from None
    return opt


class RuleSet(RuleFilesWatch):
    """One filter's rules on the driver: the current program and, with reload, its files' state."""

    def __init__(self, ctx: CompileContext, node: Node):
        self.ctx = ctx
        self.node = node
        self.graph = ctx.graph
        spec = node.spec
        smap = self.graph.smap
        self.pipeline_file = getattr(smap, "file", None) if smap is not None else None
        self.base_dir = os.path.dirname(self.pipeline_file) if self.pipeline_file else self.graph.base_dir
        self.base_dir = self.base_dir or "."
        self.reload = bool(getattr(spec, "reload", True)) and bool(spec.rule_files or spec.sigma)
        self.version = 0
        self.history: list[str] = []  # what happened at each reload (for progress output and tests)
        self.signature = self._signature() if self.reload else ()
        self.meta: dict[str, tuple] = {}  # rule id -> (id, title, level, tags): tag details, alerts
        self.silent: frozenset[str] = frozenset()  # rules only `generate: false` correlations reference
        self._silent_next: frozenset[str] = frozenset()  # ... as the files being reloaded say
        self.program = self._initial_program()  # may replace the signature by the plan's

    # ------------------------------------------------------------ programs
    def _initial_program(self) -> Any:
        loaded = (getattr(self.graph, "rules", None) or {}).get(self.node.id)
        self.meta = rule_meta(loaded if loaded is not None else self.node.spec.rules or ())
        stats = (getattr(self.graph, "sigma", None) or {}).get(self.node.id)
        self.silent = silent(stats.correlations) if stats is not None else frozenset()
        plan = self.ctx.plan
        if plan is not None:
            step = next((s for s in plan.steps if s.node_id == self.node.id), None)
            program = getattr(step, "program", None)
            if program is not None:
                if self.reload and step is not None and step.rule_files:
                    self.signature = step.rule_files  # files edited since the plan was compiled reload at once
                return program
        if loaded is None and (self.node.spec.rule_files or self.node.spec.sigma):
            raise CompileError(f"filter '{self.node.id}': its rule files were not loaded", self.node, "rule_files",
                               code="E403", hint="check the pipeline with check_file(..., programs=True)")
        rules = [r.rule for r in loaded] if loaded is not None else list(self.node.spec.rules or [])
        opt = optimizer(self.node)
        try:
            return opt.compile_rules(rules, cache=True)
        except opt.RuleCompileError as e:
            raise CompileError(f"filter '{self.node.id}': rule cannot be compiled: {e}", self.node, "rules",
                               code="E300") from None

    def _inline_rules(self) -> list[Any]:
        prefix = tuple(self.node.path) + ("rules",)
        return [r for r in (self.graph.rules.get(self.node.id) or ())
                if tuple(r.path[:len(prefix)]) == prefix and (self.pipeline_file is None or r.file == self.pipeline_file)]

    def _signature(self) -> tuple:
        return rule_files_signature(self.node.spec, self.base_dir)

    def refresh(self) -> bool:
        """Reload the rule files when they changed; True when the program was swapped."""
        if not self._files_changed():
            return False
        program, diagnostics = self._load()
        if program is None:
            lines = [d.render() for d in diagnostics if d.is_error] or ["(no diagnostic)"]
            msg = (f"filter '{self.node.id}': changed rule files rejected, the previous rules stay in force:\n  "
                   + "\n  ".join(line.replace("\n", "\n  ") for line in lines))
            self.history.append("rejected: " + "; ".join(lines))
            log.warning(msg)
            return False
        if program.digest == self.program.digest:
            self.history.append("unchanged")
            return False
        self.program = program
        self.version += 1
        self.history.append(f"reloaded: {len(program.rules)} rules")
        log.warning("filter '%s': rule files reloaded: %d rules (version %d)", self.node.id, len(program.rules),
                    self.version)
        return True

    def _sigma_rules(self, report: Any, taken: set[str]) -> list[Any]:
        return _sigma_reload(self, report, taken)

    def _load(self) -> tuple[Any, list]:
        """Load, validate and compile the filter's rules as they are now: (program, []) or (None, diagnostics)."""
        report = Report()
        rules = list(self._inline_rules())
        rules.extend(load_rule_files(self.node.spec.rule_files, self.base_dir, report, lambda k: self.node.span,
                                     vars_=self.graph.vars))
        if self.node.spec.sigma is not None:
            rules.extend(self._sigma_rules(report, {r.rule.id for r in rules}))
        if report.errors:
            return None, report.sorted()
        check_duplicate_ids(rules, report)
        check_rule_list(rules, report)
        if report.errors:
            return None, report.sorted()
        opt = optimizer(self.node)
        try:
            program = opt.compile_rules([r.rule for r in rules], cache=True)
            from etl.components.transforms.filter.alerts import rule_meta

            self.meta = rule_meta(rules)
            self.silent = self._silent_next
            return program, []
        except opt.RuleCompileError as e:
            origin = e.origin
            sr = next((r for r in rules if r.rule.id == getattr(origin, "rule", None)), None)
            span = sr.span_of("when", *getattr(origin, "path", ())) if sr is not None else self.node.span
            report.error("E300", f"rule cannot be compiled: {e.message}", span)
            return None, report.sorted()


def _sigma_reload(rs: RuleSet, report: Any, taken: set[str]) -> list[Any]:
    """The filter's Sigma rules as the files are now, less those reading columns its input does not have
    (as `etl validate` leaves them out, W341); their warnings are logged."""
    spec = rs.node.spec
    stats = SigmaStats()
    loaded = load_sigma(spec.sigma, lambda *k: rs.node.span, rs.base_dir, report, taken, stats, reload=True)
    rs._silent_next = silent(stats.correlations)
    log_once(rs.ctx.caches, rs.node.id, rs.signature, f"filter '{rs.node.id}'",
             [d for d in report.diagnostics if not d.is_error])
    ins = [e for e in rs.node.inputs if e.role == "input"]
    cols = rs.graph.columns_of(ins[0].ref) if ins else None
    if not cols:
        return loaded
    names = [c for c, _type in cols]
    return [r for r in loaded if not missing_fields((f for f, _ in r.fields), names)]


def log_once(caches: Any, filter_id: str, signature: tuple, who: str, diagnostics: list[Any]) -> None:
    """Log a reload's diagnostics of a filter's Sigma files once per version of the files: the filter's reload
    and its sigma_correlations' read the same files (the same W340 lines); whichever runs first logs them."""
    seen, logged = caches.reload_logged.get(filter_id, (None, set()))
    if seen != signature:
        logged = set()
        caches.reload_logged[filter_id] = (signature, logged)
    for d in diagnostics:
        line = d.render()
        if line not in logged:
            logged.add(line)
            log.warning("%s: %s", who, line)


def rule_set(ctx: CompileContext, node: Node) -> RuleSet:
    sets = ctx.caches.rule_sets
    rs = sets.get(node.id)
    if rs is None:
        rs = sets[node.id] = RuleSet(ctx, node)
    return rs


def ship(ctx: CompileContext, key: str, digest: str, value: Any) -> Any:
    """The broadcast variable holding `value` (a program, or a merged one) of `digest`: one per digest;
    the older ones of `key` (a filter, or a sibling group) are released."""
    shipped = ctx.caches.rule_broadcasts
    entries = shipped.setdefault(key, [])
    for d, bc in entries:
        if d == digest:
            return bc
    bc = ctx.spark.sparkContext.broadcast(value)
    entries.append((digest, bc))
    while len(entries) > _KEEP_BROADCASTS:
        _, old = entries.pop(0)
        try:
            old.unpersist(blocking=False)  # executors drop their copy; the driver keeps it for a late task
        except Exception as e:  # noqa: BLE001 - releasing memory early is an optimisation only
            log.debug("unpersist of an old rule broadcast failed: %s", e)
    return bc
