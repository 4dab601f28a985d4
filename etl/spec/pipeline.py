"""The top-level pipeline model; component unions are built from the registry."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from etl import registry
from etl.spec.base import Duration, Identifier, Model
from etl.spec.functions import FunctionSpec


def _union(kind: str) -> Any:
    specs = tuple(e.spec for e in registry.entries(kind).values())
    return Annotated[Union[specs], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007 (specs: a tuple of types)


Source = _union("source")
Transform = _union("transform")
Sink = _union("sink")


# Spark's shortest real-time batch (spark.sql.streaming.realTimeMode.minBatchDuration's default): its default interval
REALTIME_MIN_S = 5.0


class Trigger(Model):
    mode: Literal["interval", "available_now", "realtime"] = Field(
        default="interval", description="interval: run continuously; available_now: process what is there and stop; "
        "realtime: Spark's real-time mode, each row written as it arrives (a stateless Kafka -> Kafka pipeline, at "
        "least once: etl.compile.realtime)")
    interval: Duration = Field(default=Duration(1.0), description="time between micro-batches (realtime: how long "
                               "each long-running batch lasts before its offsets are checkpointed, at least 5s, "
                               "default 5s)")

    @model_validator(mode="before")
    @classmethod
    def _realtime_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("mode") == "realtime" and "interval" not in data:
            return {**data, "interval": Duration(REALTIME_MIN_S)}
        return data

    @field_validator("interval")
    @classmethod
    def _realtime_interval(cls, v: Duration, info: ValidationInfo) -> Duration:
        if info.data.get("mode") == "realtime" and v.seconds < REALTIME_MIN_S:
            raise ValueError(f"a realtime trigger's interval is at least {REALTIME_MIN_S:g}s (Spark's real-time "
                             "mode, spark.sql.streaming.realTimeMode.minBatchDuration)")
        return v


class Checkpoint(Model):
    path: str | None = Field(default=None, description="checkpoint folder (default .etl/<name>/checkpoint)")


TestRows = dict[str, list[dict[str, Any]]]


class TestBatch(Model):
    """One micro-batch of a multi-batch test: events per source, fed once the previous batch is processed."""

    inputs: TestRows = Field(default_factory=dict, description="source id -> events of this batch")
    advance: Duration | None = Field(
        default=None, description="processing time that passes before the batch (the test waits it out; at most "
        "60s per test)")
    restart: bool = Field(default=False, description="stop the pipeline before this batch and resume it from its "
                          "checkpoint")
    watermark: str | None = Field(
        default=None, description="expected event-time watermark once the batch is processed (ISO 8601)")
    expect: TestRows | None = Field(default=None, description="sink id -> exact rows written during this batch")
    dead_letters: list[dict[str, Any]] | None = Field(
        default=None, description="dead letters written during this batch (each compared on the keys it gives)")


class TestCase(Model):
    """A pipeline unit test: input events per source (or a list of micro-batches), exact expected rows per sink."""

    name: str
    inputs: TestRows | None = Field(default=None, description="source id -> events (all in one micro-batch)")
    batches: list[TestBatch] | None = Field(
        default=None, min_length=1, description="micro-batches fed one after the other (instead of inputs)")
    expect: TestRows = Field(default_factory=dict, description="sink id -> exact rows (over all batches)")
    dead_letters: list[dict[str, Any]] | None = Field(
        default=None, description="expected dead letters (each compared on the keys it gives)")
    ordered: bool = Field(default=False, description="compare rows in order")

    @model_validator(mode="after")
    def _inputs_or_batches(self) -> TestCase:
        if (self.inputs is None) == (self.batches is None):
            raise ValueError("a test gives either `inputs` or `batches`")
        return self

    def steps(self) -> list[TestBatch]:
        """The micro-batches of the case (`inputs` alone is one batch)."""
        return list(self.batches) if self.batches is not None else [TestBatch(inputs=self.inputs or {})]


class Pipeline(Model):
    name: Identifier
    description: str | None = None
    vars: dict[str, Any] = Field(default_factory=dict, description="values for {{ vars.x }} templating")
    functions: list[FunctionSpec] = Field(default_factory=list, description="Python functions (scalar, table, "
                                          "aggregate) the pipeline's expressions, selects and windows call")
    sources: list[Source] = Field(min_length=1)  # type: ignore[valid-type]
    transforms: list[Transform] = Field(default_factory=list)  # type: ignore[valid-type]
    sinks: list[Sink] = Field(min_length=1)  # type: ignore[valid-type]
    dead_letter: Sink | None = Field(  # type: ignore[valid-type]
        default=None, description="where bad records go (default: jsonl files beside the checkpoint)")
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    trigger: Trigger = Field(default_factory=Trigger)
    tests: list[TestCase] = Field(default_factory=list)
    grok_patterns: Literal["legacy", "ecs-v1"] = Field(
        default="legacy", description="the grok pattern library of every grok transform that names none "
                                      "(Logstash's ecs_compatibility: legacy = disabled, ecs-v1 = v1)")

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        lib = data.get("grok_patterns")
        if lib is not None and isinstance(data.get("transforms"), list):  # the pipeline's default library
            data["transforms"] = [{**t, "patterns": lib} if isinstance(t, dict) and t.get("type") == "grok"
                                  and "patterns" not in t else t for t in data["transforms"]]
        dl = data.get("dead_letter")
        if isinstance(dl, dict) and "id" not in dl:
            data["dead_letter"] = {"id": "dead_letter", **dl}
        if isinstance(data.get("checkpoint"), str):
            data["checkpoint"] = {"path": data["checkpoint"]}
        return data

    def components(self) -> list[Any]:
        return [*self.sources, *self.transforms, *self.sinks]
