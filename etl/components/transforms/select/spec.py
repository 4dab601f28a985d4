"""The select transform's spec: the output columns as Spark SQL expressions, renames and drops."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from etl.components.transforms.select.hooks import SelectHooks
from etl.registry import component
from etl.spec.base import TransformBase
from etl.spec.transforms import GENERATOR, PLAIN


@component("transform", "select", builder="etl.components.transforms.select.build:build_select")
class SelectTransform(SelectHooks, TransformBase):
    """Keep, rename or drop columns; `fields` entries may be expressions ("upper(x) AS y")."""

    REALTIME: ClassVar[bool] = True
    type: Literal["select"]
    fields: list[str] | None = Field(default=None,
                                     description="columns to keep: names or Spark SQL expressions (`expr AS name`)")
    rename: dict[str, str] = Field(default_factory=dict, description="old column name -> new name")
    drop: list[str] = Field(default_factory=list, description="columns to leave out")

    @model_validator(mode="after")
    def _something(self) -> SelectTransform:
        if self.fields is None and not self.rename and not self.drop:
            raise ValueError("a select needs `fields`, `rename` or `drop`")
        return self

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return self.fields is not None and any(not (PLAIN.fullmatch(f.strip()) or GENERATOR.search(f))
                                               for f in self.fields)
