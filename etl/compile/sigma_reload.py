"""Hot reload of a running sigma_correlation's correlation rules, checked before each of its micro-batches.

A sigma_correlation's windows are streaming aggregations: their state is fixed when the query starts. What
is computed after them (the condition `value <op> count`, the rule's title, level and tags, which correlations
output rows) runs on each micro-batch (etl.components.transforms.sigma_correlation.build `tail`), so it can change
while the query runs. Before each micro-batch the input filter's Sigma files are compared (paths, mtime,
size: etl.load.rules.rule_files_signature); on a change they are read again (etl.load.sigma.load_sigma, a
changed file that cannot be read keeps its previous version) and the correlation rules resolved:

* a changed condition, title, level or tags, and a removed correlation apply from that batch (a changed
  `generate` is accepted here; it acts on the filter's alert output, which reloads with its detection rules);
* an added correlation, or one whose type, rules, timespan, group-by (aliases), field or percentile
  changed, needs a new windowed state: the whole change is rejected with one W342 line per culprit
  (`file:line:col W342 ...`, logger `etl.rules`, WARNING) and the previous rules stay in force (a restart
  of the pipeline applies it, from a new checkpoint: the old windows' state does not fit the new rules).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from etl.compile.context import CompileContext
from etl.compile.rule_programs import log_once
from etl.diagnostics import Report
from etl.graph.model import Node
from etl.load.rules import RuleFilesWatch, rule_files_signature
from etl.load.sigma import SigmaStats, load_sigma
from etl.load.sigma_corr import needs_restart
from etl.spec.sigma import missing_fields

log = logging.getLogger("etl.rules")


class CorrelationSet(RuleFilesWatch):
    """The correlation rules a sigma_correlation applies now, and its input filter's Sigma files' state."""

    def __init__(self, ctx: CompileContext, node: Node):
        self.graph = ctx.graph
        self.caches = ctx.caches
        self.node = node
        self.src = next(e.src for e in node.inputs if e.role == "input")
        self.filter = self.graph.node(self.src)
        stats = self.graph.sigma.get(self.src)
        self.current: list[Any] = list(stats.correlations) if stats is not None else []
        smap = self.graph.smap
        pipeline_file = getattr(smap, "file", None) if smap is not None else None
        self.base_dir = (os.path.dirname(pipeline_file) if pipeline_file else self.graph.base_dir) or "."
        self.reload = getattr(self.filter.spec, "sigma", None) is not None and bool(
            getattr(self.filter.spec, "reload", True))
        self.signature = self._signature() if self.reload else ()
        self.history: list[str] = []  # what each reload did (tests, progress)

    def _signature(self) -> tuple:
        return rule_files_signature(self.filter.spec, self.base_dir)

    def refresh(self) -> bool:
        """Apply the Sigma files' correlation rules if they changed and can apply; True when they were swapped."""
        if not self._files_changed():
            return False
        new = self._load()
        blocked = needs_restart(self.current, new)
        if blocked:
            for file, line, col, message in blocked:
                log.warning("sigma_correlation '%s': %s:%d:%d: W342 %s; the previous correlation rules stay in force",
                            self.node.id, file, line, col, message)
            self.history.append("rejected: " + "; ".join(f"{f}:{ln}:{c}" for f, ln, c, _m in blocked))
            return False
        if new == self.current:
            self.history.append("unchanged")
            return False
        self.current = new
        self.history.append(f"reloaded: {len(new)} correlation rules")
        log.warning("sigma_correlation '%s': correlation rules reloaded: %d", self.node.id, len(new))
        return True

    def _load(self) -> list[Any]:
        """The correlation rules as the files are now, less those reading columns the alerts lack (W341)."""
        report = Report()
        stats = SigmaStats()
        taken = {r.rule.id for r in (self.graph.rules.get(self.src) or ()) if not hasattr(r, "sigma")}
        load_sigma(self.filter.spec.sigma, lambda *k: self.filter.span, self.base_dir, report, taken, stats,
                   reload=True)
        log_once(self.caches, self.src, self.signature, f"sigma_correlation '{self.node.id}'", report.diagnostics)
        cols = self.graph.columns_of(self.src)
        if not cols:
            return list(stats.correlations)
        names = [c for c, _type in cols]
        return [c for c in stats.correlations if not missing_fields((col for col, _key in c.columns()), names)]


def correlation_set(ctx: CompileContext, node: Node) -> CorrelationSet:
    sets = ctx.caches.correlation_sets
    cs = sets.get(node.id)
    if cs is None:
        cs = sets[node.id] = CorrelationSet(ctx, node)
    return cs
