"""The route transform's spec: events to named outputs by condition."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from etl.components.transforms.route.hooks import RouteHooks
from etl.registry import component
from etl.spec.base import Identifier, TransformBase


@component("transform", "route", builder="etl.components.transforms.route.build:build")
class RouteTransform(RouteHooks, TransformBase):
    """Send events to labelled outputs, referenced downstream as '<id>.<label>'."""

    type: Literal["route"]
    routes: dict[Identifier, str] = Field(min_length=1, description="label -> Spark SQL condition")
    default: Identifier | None = Field(default=None, description="label for events no route matches")

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return True
    exclusive: bool = Field(default=False, description="an event goes to the first matching route only")

    @model_validator(mode="after")
    def _default_is_new(self) -> RouteTransform:
        if self.default is not None and self.default in self.routes:
            raise ValueError(f"`default` label '{self.default}' is also a route label")
        return self

    def outputs(self) -> list[str]:
        return list(self.routes) + ([self.default] if self.default else [])
