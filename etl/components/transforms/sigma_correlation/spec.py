"""The sigma_correlation transform's spec: Sigma correlation rules over a filter's alerts."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import EventTime, TransformBase
from etl.spec.sigma import SigmaCorrelationHooks


@component("transform", "sigma_correlation", builder="etl.components.transforms.sigma_correlation.build:build")
class SigmaCorrelationTransform(SigmaCorrelationHooks, TransformBase):
    """Sigma correlation rules (see docs/rules-and-sigma.md, "Sigma correlation rules") over the alerts of a filter
    with `sigma` in alerts mode: one row per correlation rule, group and window whose condition holds."""

    type: Literal["sigma_correlation"]
    event_time: EventTime | None = Field(default=None, description="overrides the source's event time")
    slides: int = Field(default=1, ge=1, le=60, description="windows per timespan: 1 = tumbling windows of the "
                        "timespan; k > 1 = sliding windows of the timespan starting every timespan/k")
    STATEFUL: ClassVar[bool] = True
    WATERMARK_STATE: ClassVar[bool] = True
    EVENT_TIME_USE: ClassVar[str] = "window"
    RUNS_CORRELATIONS: ClassVar[bool] = True

    def event_time_out(self) -> bool | None:
        return True
