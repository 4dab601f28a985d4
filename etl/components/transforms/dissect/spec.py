"""The dissect transform's spec: Logstash dissect mappings over a text field."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.components.transforms.dissect.hooks import DissectHooks
from etl.registry import component
from etl.spec.base import TransformBase


@component("transform", "dissect", builder="etl.components.transforms.dissect.build:build")
class DissectTransform(DissectHooks, TransformBase):
    """Parse text fields with Logstash's dissect patterns (%{a} %{+a} %{?skip} %{&key} %{pad->})."""

    CARRIES_FAILED_ROWS: ClassVar[bool] = True
    type: Literal["dissect"]
    mapping: dict[str, str] = Field(min_length=1, description="text column -> dissect pattern, applied in order (a "
                                    "later one may dissect a field an earlier one sets)")
    convert_datatype: dict[str, Literal["int", "float"]] = Field(
        default_factory=dict, description="field -> int (64-bit integer) or float (double), after every mapping")
    append_separator: str | None = Field(
        default=None, description="joins appended values (Elasticsearch's option); default: the delimiter before "
        "each appended field, or a space (Logstash)")
    indirect_field: str = Field(default="indirect", description="map column of the indirect fields (%{&key})")
    remove_field: list[str] = Field(default_factory=list, description="columns left out of the output (Logstash's "
                                    "common option; e.g. the dissected line)")
    on_error: Literal["dead_letter", "drop", "keep"] = Field(
        default="dead_letter", description="what to do with a line that does not match")

    def engine_aspects(self) -> tuple[str, ...]:
        return ("dissect",)

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return self.on_error == "dead_letter"
