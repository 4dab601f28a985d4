"""The grok transform's spec: Logstash grok patterns over a text field."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from etl.components.transforms.grok.hooks import GrokHooks
from etl.registry import component
from etl.spec.base import TransformBase


@component("transform", "grok", builder="etl.components.transforms.grok.build:build")
class GrokTransform(GrokHooks, TransformBase):
    """Parse a text field with a grok pattern (%{NAME:field[:int|float]})."""

    CARRIES_FAILED_ROWS: ClassVar[bool] = True
    type: Literal["grok"]
    field: str = Field(description="text column to parse")
    pattern: str | list[str] = Field(description="grok pattern, e.g. '%{COMBINEDAPACHELOG}'; a list: several "
                                     "patterns tried in order (see break_on_match)")
    break_on_match: bool = Field(default=True, description="several patterns: true, the first one that matches "
                                 "gives the fields; false, every one that matches adds its fields (Logstash's "
                                 "break_on_match)")
    custom_patterns: dict[str, str] = Field(default_factory=dict, description="extra NAME -> regex definitions")
    patterns: Literal["legacy", "ecs-v1"] = Field(
        default="legacy", description="Logstash's pattern library: legacy (ecs_compatibility => disabled) or ecs-v1")
    overwrite: list[str] = Field(default_factory=list, description="captured fields that replace an input column "
                                 "of the same name (Logstash's overwrite) instead of making it a list")
    named_captures_only: bool = Field(default=True, description="false: %{NAME} without a field captures into NAME")
    keep_original: bool = Field(default=True, description="keep the parsed text column")
    target: str | None = Field(default=None, min_length=1, description="one struct column of this name holds the "
                               "captures (Logstash's target); a line that does not match gives NULL there and goes "
                               "on (SQL's GROK(field, pattern))")
    keep_empty_captures: bool = Field(default=False, description="an empty capture is '' (Logstash's "
                                      "keep_empty_captures); false: no value")
    on_error: Literal["dead_letter", "drop", "keep"] = Field(
        default="dead_letter", description="what to do with a line that does not match (with `target`: a value "
                                           "that does not convert, a line the regex gave up on)")

    def engine_aspects(self) -> tuple[str, ...]:
        return ("captures",)

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return self.on_error == "dead_letter"

    @field_validator("pattern")
    @classmethod
    def _some_pattern(cls, v: str | list[str]) -> str | list[str]:
        if isinstance(v, list) and not v:
            raise ValueError("give at least one pattern")
        return v

    @model_validator(mode="after")
    def _target_alone(self) -> GrokTransform:
        if self.target is not None and self.overwrite:
            raise ValueError("`overwrite` names input columns a capture replaces: with `target` the captures go "
                             "into a new struct column")
        return self
