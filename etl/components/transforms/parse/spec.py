"""The parse transform's spec: json, csv, kv or regex parsing of a text field."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.components.transforms.parse.hooks import ParseHooks
from etl.registry import component
from etl.spec.base import Model, TransformBase


class KvOptions(Model):
    pair_sep: str = Field(default=" ", min_length=1, description="separator between two pairs")
    kv_sep: str = Field(default="=", min_length=1, description="separator between a key and its value")


@component("transform", "parse", builder="etl.components.transforms.parse.build:build")
class ParseTransform(ParseHooks, TransformBase):
    """Parse a text field as json, kv or csv into columns."""

    CARRIES_FAILED_ROWS: ClassVar[bool] = True
    type: Literal["parse"]
    field: str = Field(description="the text column to parse")
    format: Literal["json", "kv", "csv"] = Field(description="json, kv (key=value pairs) or csv")
    schema_: dict[str, str] = Field(alias="schema", min_length=1, description="columns to extract: name -> Spark SQL type")
    kv: KvOptions = Field(default_factory=KvOptions, description="kv: the separators")
    delimiter: str = Field(default=",", max_length=1, description="csv delimiter")
    keep_original: bool = Field(default=True, description="keep the parsed column in the output")
    on_error: Literal["dead_letter", "drop", "keep"] = Field(default="dead_letter",
        description="a row that does not parse: dead_letter, drop or keep")
    RUN_WITH_ENGINES: ClassVar[bool] = True

    def engine_aspects(self) -> tuple[str, ...]:
        return ("parser",) if self.format == "json" else ()

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return self.on_error == "dead_letter"
