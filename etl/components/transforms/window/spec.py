"""The window transform's spec: tumbling, sliding, session and cumulating windows over event time, their
aggregates and their emission (early rows, late updates)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from etl.components.transforms.window.hooks import WindowHooks
from etl.registry import component
from etl.spec.aggregates import AGGREGATES, NAMES
from etl.spec.base import Duration, EventTime, Identifier, Model, PositiveDuration, TransformBase

AggFn = Literal[NAMES]  # type: ignore[valid-type]  # the names of etl.spec.aggregates.AGGREGATES


class Aggregate(Model):
    fn: AggFn | Identifier = Field(description="a built-in aggregate, or an aggregate function of the pipeline's "
                                   "`functions:`")
    field: str | None = Field(default=None, description="input column (not needed for count)")
    as_: Identifier = Field(alias="as", description="output column")
    n: int | None = Field(default=None, ge=1, description="top_n: how many values")

    @model_validator(mode="after")
    def _field_needed(self) -> Aggregate:
        entry = AGGREGATES.get(self.fn)
        if (entry is None or entry.needs_field) and self.field is None:
            raise ValueError(f"aggregate {self.fn} needs a `field`")
        if entry is not None and entry.needs_n and self.n is None:
            raise ValueError(f"{self.fn} needs `n`")
        return self


class Emit(Model):
    early: PositiveDuration | None = Field(default=None, description="emit partial results this often before the window closes")
    late: Literal["drop", "dead_letter", "update"] = Field(
        default="drop", description="events for a closed window: drop, dead_letter, or update it (allowed_lateness)")
    allowed_lateness: PositiveDuration | None = Field(
        default=None, description="late: update: how long after it closed a window is still updated by late events")
    every: PositiveDuration | None = Field(
        default=None, description="late: update: at most one update row per window this often (processing time)")
    too_late: Literal["drop", "dead_letter"] = Field(
        default="drop", description="late: update: events later than allowed_lateness")
    timers: Literal["event", "processing"] = Field(
        default="event", description="early rows of idle keys: when the watermark moves (event), or within `early` "
                                     "of wall-clock time (processing; continuous runs only)")

    @model_validator(mode="after")
    def _late_update(self) -> Emit:
        if self.late == "update" and self.allowed_lateness is None:
            raise ValueError("`late: update` needs `allowed_lateness` (how long a closed window takes late events)")
        if self.late != "update":
            extra = [k for k in ("allowed_lateness", "every", "too_late") if k in self.model_fields_set]
            if extra:
                raise ValueError(f"`{extra[0]}` applies to `late: update` only")
        if self.timers == "processing" and self.early is None:
            raise ValueError("`timers: processing` applies to `early` only")
        return self

    def flag_columns(self) -> tuple[str, ...]:
        """Columns the window adds after its aggregates (booleans): `_final` and `_retract` with provisional
        rows or late updates, `_update` with late updates (see etl/compile/windows/native.py)."""
        if self.late == "update":
            return ("_final", "_retract", "_update")
        return ("_final", "_retract") if self.early is not None else ()


MAX_WINDOWS_PER_EVENT = 1000  # size / slide of a sliding window, size / step of a cumulating one


def _per_event(key: str, every: Duration | None, size: Duration | None) -> None:
    if every is not None and size is not None and -(-size.millis // every.millis) > MAX_WINDOWS_PER_EVENT:
        n = -(-size.millis // every.millis)
        raise PydanticCustomError(  # E102 at the slide, with the hint
            "value_error", f"invalid {key} {every}: each event would be in {n:,} windows (size {size} / {key} "
            f"{every}), more than etl's limit of {MAX_WINDOWS_PER_EVENT:,} (Spark makes a copy of each row per "
            "window)", {"hint": f"use a longer {key} or a shorter size"})


@component("transform", "window", builder="etl.components.transforms.window.build:build")
class WindowTransform(WindowHooks, TransformBase):
    """Rows grouped into time windows (tumbling, sliding, cumulating, session) and aggregated per window and key."""

    type: Literal["window"]
    kind: Literal["tumbling", "sliding", "cumulating", "session"] = Field(
        description="tumbling, sliding, cumulating or session")
    size: PositiveDuration | None = Field(default=None, description="tumbling/sliding window length; cumulating: "
                                          "the longest window")
    slide: PositiveDuration | None = Field(default=None, description="sliding: step between window starts")
    step: PositiveDuration | None = Field(default=None, description="cumulating: windows [start, start + step), "
                                          "[start, start + 2 step), ... up to size, for each start a multiple of size")
    offset: Duration | None = Field(default=None, description="tumbling/sliding/cumulating: window starts are "
                                    "shifted by this from multiples of the size (sliding: the slide) since "
                                    "1970-01-01 UTC; shorter than it")
    gap: PositiveDuration | None = Field(default=None, description="session: inactivity gap that closes a session")
    time: Literal["event", "processing"] = Field(default="event",
        description="event time (the watermark closes windows) or processing time")
    event_time: EventTime | None = Field(default=None, description="overrides the source's event time")
    group_by: list[str] = Field(default_factory=list, description="key columns: one row per window and key")
    aggregates: list[Aggregate] = Field(min_length=1,
                                        description="what each window's row computes: [{fn, field, as, n}]")
    having: str | None = Field(default=None, description="Spark SQL condition over group and aggregate columns")
    emit: Emit = Field(default_factory=Emit,
                       description="when rows go out: early, final, late (the guide's \"Window results\")")
    STATEFUL: ClassVar[bool] = True
    WATERMARK_STATE: ClassVar[bool] = True
    PASSES_UPDATES: ClassVar[bool] = False

    def engine_aspects(self) -> tuple[str, ...]:
        return ("window",)

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        # a Python aggregate function raising on a window or a key (etl.compile.windows.state), `having`, late rows
        return any(a.fn not in AGGREGATES for a in self.aggregates) or bool(self.having) \
            or self.emit.late == "dead_letter"

    def grouped_by_expressions(self) -> tuple[str, ...]:
        return tuple(self.group_by)

    def event_time_use(self) -> str:
        return "window" if self.time == "event" else "processing"

    def event_time_out(self) -> bool | None:
        return self.time == "event"

    def updates_keys(self) -> bool:
        return bool(self.emit.flag_columns())

    def update_keys(self) -> str:
        return ", ".join([*self.group_by, "window_start", "window_end"])

    def update_flags(self) -> tuple[str, ...]:
        return self.emit.flag_columns()

    @field_validator("slide")
    @classmethod
    def _slide_within_size(cls, slide: Duration | None, info: ValidationInfo) -> Duration | None:
        size = info.data.get("size")
        if slide is not None and size is not None and slide > size:
            raise ValueError(f"invalid slide {slide}: longer than the window `size` ({size})")
        _per_event("slide", slide, size)
        return slide

    @field_validator("step")
    @classmethod
    def _step_divides_size(cls, step: Duration | None, info: ValidationInfo) -> Duration | None:
        size = info.data.get("size")
        if step is not None and size is not None and size.millis % step.millis:
            raise ValueError(f"invalid step {step}: the size ({size}) is not a whole number of steps")
        _per_event("step", step, size)
        return step

    @model_validator(mode="after")
    def _shape(self) -> WindowTransform:
        if self.kind in ("tumbling", "sliding", "cumulating") and self.size is None:
            raise ValueError(f"a {self.kind} window needs `size`")
        if self.kind == "sliding" and self.slide is None:
            raise ValueError("a sliding window needs `slide`")
        if self.kind == "session" and self.gap is None:
            raise ValueError("a session window needs `gap`")
        if self.kind == "cumulating" and self.step is None:
            raise ValueError("a cumulating window needs `step`")
        if self.step is not None and self.kind != "cumulating":
            raise ValueError(f"`step` applies to a cumulating window, not a {self.kind} one")
        if self.offset is not None and self.kind == "session":
            raise ValueError("`offset` applies to a tumbling, sliding or cumulating window, not a session one")
        period, name = (self.slide, "slide") if self.kind == "sliding" else (self.size, "size")
        if self.offset is not None and period is not None and self.offset.millis >= period.millis:
            same = Duration(self.offset.millis % period.millis / 1000)
            raise ValueError(f"`offset` {self.offset} is not shorter than the {name} ({period}): it gives the "
                             "windows of " + (f"offset {same}" if same.millis else "no offset"))
        seen = {"window_start", "window_end", *self.emit.flag_columns()}
        for a in self.aggregates:
            if a.as_.lower() in seen:
                raise ValueError(f"aggregate output '{a.as_}' repeats another output column of the window")
            seen.add(a.as_.lower())
        return self
