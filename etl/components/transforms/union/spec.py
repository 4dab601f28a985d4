"""The union transform's spec: several inputs as one stream."""

from __future__ import annotations

from typing import ClassVar, Literal

from etl.components.transforms.union.hooks import UnionHooks
from etl.registry import component
from etl.spec.base import TransformBase


@component("transform", "union", builder="etl.components.transforms.union.build:build")
class UnionTransform(UnionHooks, TransformBase):
    """Merge several inputs with the same columns (by name)."""

    type: Literal["union"]
    PASSES_UPDATES: ClassVar[bool] = False
