"""The generator source's spec: synthetic events at a rate, one field generator per column."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.base import MAX_INT64, MIN_INT64, Instant, Model, SourceBase

Int64 = Annotated[int, Field(ge=MIN_INT64, le=MAX_INT64)]


class FieldGen(Model):
    """How the generator makes one field: exactly one of the keys."""

    choice: list[Any] | None = Field(default=None, description="pick one value (weighted by `weights`)")
    weights: list[float] | None = Field(default=None, description="choice: the relative weight of each value")
    int_range: tuple[Int64, Int64] | None = Field(default=None, description="uniform integer in [lo, hi]")
    float_range: tuple[float, float] | None = Field(default=None, description="uniform number in [lo, hi]")
    sequence: Int64 | None = Field(default=None, description="counter starting at this value")
    ipv4: bool | None = Field(default=None, description="a random IPv4 address")
    template: str | None = Field(default=None, description="text with {field} references to other fields")
    timestamp: Literal["event"] | None = Field(default=None, description="the event time of the generated event")
    const: Any = Field(default=None, description="the same value in every event")

    @model_validator(mode="after")
    def _one(self) -> FieldGen:
        keys = [k for k in ("choice", "int_range", "float_range", "sequence", "ipv4", "template", "timestamp", "const")
                if getattr(self, k) is not None]
        if len(keys) != 1:
            raise ValueError("a generated field needs exactly one of choice, int_range, float_range, sequence, "
                             f"ipv4, template, timestamp, const (got {', '.join(keys) or 'none'})")
        if self.int_range is not None and self.int_range[0] > self.int_range[1]:
            raise ValueError(f"int_range [{self.int_range[0]}, {self.int_range[1]}] is empty: give [low, high]")
        if self.weights is not None and (self.choice is None or len(self.weights) != len(self.choice)):
            raise ValueError("weights must have one number per choice")
        return self


@component("source", "generator", builder="etl.components.sources.generator.build:build")
class GeneratorSource(SourceBase):
    """Synthetic, seeded, deterministic events for demos, tests and benchmarks."""
    REREADS_EXACTLY: ClassVar[bool] = True  # event i is a function of (seed, i)

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("generator", "datagen")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sources.generator.sql:map_options"

    type: Literal["generator"]
    fields: dict[str, FieldGen] = Field(min_length=1)
    count: int | None = Field(default=None, ge=0, le=MAX_INT64, description="stop after this many events (unbounded if absent)")
    rate: float | None = Field(default=None, gt=0, description="events per second of event time")
    seed: int = Field(default=0, description="random seed: the same seed gives the same events")
    start_time: Instant = Field(default=Instant("2026-01-01T00:00:00Z"), description="event time of the first event (ISO 8601)")
    rows_per_batch: int = Field(default=100_000, ge=1, le=100_000_000, description="events per micro-batch at most")

    def engine_aspects(self) -> tuple[str, ...]:
        return ("offsets",)  # GeneratorIndex.java's or the Python data source's (etl.physical.engines)

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        from etl.spec.generated import template_problems

        for name, message, hint in template_problems(self.fields):
            cx.report.error("E102", f"{message} in generator '{node.id}'", cx.span(node, "fields", name, "template"),
                            hint)
        for name in self.fields:  # a field is a column: the checks of a schema's names
            cx.internal(node, name, cx.key_span(node, "fields", name))
        return super().output_columns(cx, node, inputs)

    def declared_columns(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, g in self.fields.items():
            if g.int_range is not None or g.sequence is not None:
                out[name] = "bigint"
            elif g.float_range is not None:
                out[name] = "double"
            elif g.timestamp is not None:
                out[name] = "timestamp"
            elif g.choice is not None and g.choice and all(isinstance(c, int) and not isinstance(c, bool)
                                                          for c in g.choice):
                out[name] = "bigint"
            else:
                out[name] = "string"
        return self.schema_ or out
