"""The filter transform's spec: keep, drop or tag events by a Spark SQL condition and/or rules (inline, rule files,
Sigma)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from etl.components.transforms.filter.hooks import FilterHooks
from etl.registry import component
from etl.spec.base import TransformBase
from etl.spec.rules import Rule
from etl.spec.sigma import SigmaSpec


@component("transform", "filter", builder="etl.components.transforms.filter.build:build")
class FilterTransform(FilterHooks, TransformBase):
    """Keep, drop or tag events by a Spark SQL condition and/or a rule set."""

    type: Literal["filter"]
    expr: str | None = Field(default=None, description="Spark SQL condition, e.g. \"status >= 500\"")
    rules: list[Rule] | None = Field(default=None, description="inline rules")
    rule_files: list[str] = Field(default_factory=list, description="YAML files holding more rules (paths or globs)")
    sigma: SigmaSpec | None = Field(default=None,
                                    description="Sigma rule files (see docs/rules-and-sigma.md, \"Sigma rules\")")
    mode: Literal["keep", "drop", "tag", "alerts"] = Field(
        default="keep", description="keep matching events, drop them, keep all and tag each with the matched rule "
        "ids (and their metadata), or one row per (event, matched rule) with the rule's metadata")
    tag_field: str = Field(default="matched_rules", description="tag mode: array column of matched rule ids")
    tag_details: bool | None = Field(
        default=None, description="tag mode: the tag column holds the matched rules' metadata (rule, id, title, "
        "level, tags) instead of their ids; on by default for filters with `sigma`")
    reload: bool = Field(default=True, description="re-read rule files between micro-batches when they change")
    LOADS_RULES: ClassVar[bool] = True
    REALTIME: ClassVar[bool] = True

    @model_validator(mode="after")
    def _something_to_test(self) -> FilterTransform:
        if self.expr is None and not self.has_rules:
            raise ValueError("a filter needs `expr`, `rules`, `rule_files` or `sigma`")
        if self.mode in ("tag", "alerts") and not self.has_rules:
            raise ValueError(f"{self.mode} mode needs rules to tag with")
        return self

    @property
    def has_rules(self) -> bool:
        return bool(self.rules or self.rule_files or self.sigma)

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        # an expr that throws; rules run by Python workers that may leave a row undecided (a regex gave up)
        return self.expr is not None or (self.has_rules and engines.get("rules") == "rules-python" and undecided)

    @property
    def details(self) -> bool:
        """Tag mode: does the tag column hold rule metadata (structs) rather than rule ids?"""
        return self.tag_details if self.tag_details is not None else self.sigma is not None
