"""The `sigma:` block of a filter: Sigma rule files, which of them to load, and how their fields map."""

from __future__ import annotations

import re

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from etl.diagnostics import Span
from etl.spec.base import Model

# output of a filter with rules (any rules, Sigma or not) in tag mode with details, and in alerts mode
DETAIL_TYPE = "array<struct<rule:string,id:string,title:string,level:string,tags:array<string>>>"
ALERT_COLUMNS = {"rule": "string", "rule_id": "string", "rule_title": "string", "rule_level": "string",
                 "rule_tags": "array<string>"}

SigmaLevel = Literal["informational", "low", "medium", "high", "critical"]
SigmaStatus = Literal["stable", "test", "experimental", "deprecated", "unsupported"]


class SigmaSelect(Model):
    """Which rules of the files are loaded: every given key must match (logsource keys case-insensitively)."""

    product: str | None = Field(default=None, description="logsource product, e.g. windows")
    category: str | None = Field(default=None, description="logsource category, e.g. process_creation")
    service: str | None = Field(default=None, description="logsource service, e.g. security")
    status: list[SigmaStatus] = Field(default_factory=list, description="allowed statuses (all when empty)")
    level: list[SigmaLevel] = Field(default_factory=list, description="allowed levels (all when empty)")


class SigmaSpec(Model):
    """Sigma rules of a filter (see docs/rules-and-sigma.md, "Sigma rules")."""

    paths: list[str] = Field(min_length=1, description=".yml files, folders (read recursively) or globs, "
                             "relative to the pipeline file's folder")
    select: SigmaSelect = Field(default_factory=SigmaSelect, description="which rules of the paths to load")
    preset: Literal["sysmon", "ecs", "ocsf"] | None = Field(
        default=None, description="named field mapping: sysmon (Sigma's names, as Sysmon writes them), ecs or ocsf")
    field_mapping: dict[str, str] = Field(
        default_factory=dict, description="Sigma field -> event column or nested path (a.b); wins over the preset")
    keyword_fields: list[str] = Field(
        default_factory=list, description="text columns that keyword (field-less) searches look in")
    vars: dict[str, str | list[str]] = Field(
        default_factory=dict, description="values of the %name% placeholders of the `expand` modifier")


# output of a sigma_correlation transform: one row per (correlation rule, group, window) whose condition holds
CORRELATION_COLUMNS = {**ALERT_COLUMNS, "correlation_type": "string", "group": "map<string,string>",
                       "window_start": "timestamp", "window_end": "timestamp", "value": "double",
                       "rules_seen": "array<string>"}


# the columns etl/components/transforms/sigma_correlation/build.py adds to the alerts it groups: an input column of one of
# these names would be overwritten (a silently different answer), so validate refuses it
_WORKING_COLUMNS = re.compile(r"_[gt]\d+|_field|_value|_values|_seen")


class SigmaCorrelationHooks:
    """Columns and explain text of a `sigma_correlation` transform (its correlation rules come from the Sigma
    files of its input filter: `graph.sigma[filter id].correlations`)."""

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        cols = cx.first(inputs)
        edge = next((e for e in node.inputs if e.role == "input"), None)
        if edge is None:
            return dict(CORRELATION_COLUMNS)
        src = cx.graph.nodes.get(edge.src)
        if src is not None and not (getattr(src.spec, "sigma", None) is not None  # a filter with `sigma`
                                    and src.spec.mode == "alerts"):
            cx.report.error("E203", f"sigma_correlation '{node.id}' reads '{edge.ref}', which is not a filter with "
                            "`sigma` in alerts mode", edge.span or node.span,
                            "give it the output of a filter with `sigma:` and `mode: alerts`")
        if self.event_time is not None:
            cx.event_time_field(node, ("event_time", "field"), self.event_time.field, cols)
        for name in cols or ():
            if _WORKING_COLUMNS.fullmatch(name.lower()):
                cx.report.error("E102", f"column '{name}' of the alerts sigma_correlation '{node.id}' reads is a name "
                                "it computes with (_g0.., _t0.., _field, _value, _values, _seen): its value would be "
                                "replaced", edge.span or node.span, f"rename '{name}' upstream (a select's `rename`)")
        stats = cx.graph.sigma.get(edge.src)
        if stats is not None and cols is not None:
            stats.correlations = [c for c in stats.correlations if _columns_present(cx, node, c, cols)]
        return dict(CORRELATION_COLUMNS)

    def explain_lines(self: Any) -> list[str]:
        return ["windows of each correlation's timespan" + (f", {self.slides} per timespan (sliding)"
                                                            if self.slides > 1 else " (tumbling)")]


def missing_fields(fields: Iterable[str], columns: Iterable[str]) -> list[str]:
    """The (mapped) Sigma fields that events with these columns do not have: neither the field nor the column its
    path starts with (`a.b` reads column `a`) is one of them, compared case-insensitively as Spark resolves names.
    validate's W341 and the reloads between micro-batches (etl.compile) leave out the rules reading them."""
    names = {c.lower() for c in columns}
    return [f for f in fields if f.lower() not in names and f.split(".", 1)[0].lower() not in names]


def _columns_present(cx: Any, node: Any, corr: Any, cols: dict[str, str]) -> bool:
    """W341 for a correlation grouping by (or counting) a column the alerts do not have; False then."""
    for col, key in corr.columns():
        if missing_fields([col], cols):
            line, col_no = corr.positions_of(key)
            cx.report.warning("W341", f"Sigma correlation rule '{corr.title}' (sigma_correlation '{node.id}') reads "
                              f"'{col}' that the events do not have: it is left out", Span(corr.file, line, col_no),
                              "map the Sigma field onto an event column with `sigma.field_mapping` (or a `preset`)")
            return False
    return True

