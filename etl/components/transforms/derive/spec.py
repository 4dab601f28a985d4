"""The derive transform's spec: columns computed by Spark SQL expressions."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from etl.components.transforms.derive.hooks import DeriveHooks
from etl.registry import component
from etl.spec.base import TransformBase


@component("transform", "derive", builder="etl.components.transforms.derive.build:build_derive")
class DeriveTransform(DeriveHooks, TransformBase):
    """Add or replace columns computed by Spark SQL expressions."""

    type: Literal["derive"]
    columns: dict[str, str] = Field(min_length=1, description="new column -> Spark SQL expression")

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return True
