"""The filter transform's column propagation and checks: rule fields against the input's columns, the tag and alert
columns it adds, Sigma rules reading absent fields (W341) and correlations nothing reads (W340)."""

from __future__ import annotations

from typing import Any

from etl import registry
from etl.diagnostics import Span
from etl.spec.rules import walk_predicates
from etl.spec.sigma import ALERT_COLUMNS, DETAIL_TYPE, missing_fields
from etl.spec.transform_hooks import Cols


class FilterHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        if self.expr is not None:
            cx.expr(node, ("expr",), self.expr, cols, cx.where(node, "expr"))
        if cols is not None:
            absent = []
            for sr in cx.graph.rules.get(node.id, ()):
                if getattr(sr, "sigma", None) is not None:
                    absent.extend(_sigma_fields(cx, node, sr, cols))
                    continue
                for pred, ppath in walk_predicates(sr.rule.when, ("when",)):
                    where = f"rule '{sr.rule.id}' of filter '{node.id}'"
                    found = cx.need(cols, pred.field, sr.span_of(*ppath, "field"), where)
                    if found is not None:
                        cx.rule_value(cols, found, pred, lambda *k, p=ppath, r=sr: r.span_of(*p, *k), where)
            if absent:  # such a Sigma rule never matches: it is left out of the filter
                cx.graph.rules[node.id] = tuple(r for r in cx.graph.rules[node.id] if r.rule.id not in absent)
                if cx.graph.sigma.get(node.id) is not None:
                    cx.graph.sigma[node.id].absent = len(absent)
            if self.mode == "tag":
                cols[self.tag_field] = DETAIL_TYPE if self.details else "array<string>"
            elif self.mode == "alerts":
                cols.pop(cx.find(cols, self.tag_field) or self.tag_field, None)
                cols.update(ALERT_COLUMNS)
        if self.mode == "tag":
            cx.internal(node, self.tag_field, cx.span(node, "tag_field"))
        _unread_correlations(cx, node)
        return cols

    def explain_lines(self: Any) -> list[str]:
        out = [f"mode {self.mode}" + (f", tag field {self.tag_field}" if self.mode == "tag" else "")]
        if self.expr:
            out.append(f"expr: {self.expr}")
        return out


def _unread_correlations(cx: Any, node: Any) -> None:
    """W340 for each Sigma correlation rule of a filter that no sigma_correlation transform reads."""
    stats = cx.graph.sigma.get(node.id)
    if stats is None or not stats.correlations:
        return
    if any(getattr(registry.traits_of(n.spec), "RUNS_CORRELATIONS", False) for n in cx.graph.downstream(node.id)):
        return
    for c in stats.correlations:
        cx.report.warning("W340", f"Sigma correlation rule '{c.title}' does not run: no sigma_correlation transform "
                          f"reads filter '{node.id}'", Span(c.file, c.line, 1),
                          f"add `{{id: correlated, type: sigma_correlation, input: {node.id}}}` (the filter in "
                          "`mode: alerts`)")


def _sigma_fields(cx: Any, node: Any, sr: Any, cols: Cols) -> list[str]:
    """W341 for a Sigma rule reading a column the events do not have; returns [its id] then."""
    absent = set(missing_fields((f for f, _ in sr.fields), cols))
    missing = [(f, sf) for f, sf in sr.fields if f in absent]
    if not missing:
        return []
    cx.report.warning("W341", f"{sr.name} (filter '{node.id}') reads "
                      + ", ".join(f"'{f}'" for f, _ in missing) + " that the events do not have: it never "
                      "matches", sr.field_span(missing[0][1]), "map the Sigma field onto an event column with "
                      "`sigma.field_mapping` (or a `preset`), or select the rules of this log source only")
    return [sr.rule.id]
