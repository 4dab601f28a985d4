"""Transform specs: filter, derive, select, grok, dissect, parse, union, route, window, sigma_correlation, join, lookup,
dedupe."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from etl.registry import component
from etl.spec.aggregates import AGGREGATES, NAMES
from etl.spec.dissect_hooks import DissectHooks
from etl.spec.base import Duration, EventTime, Identifier, Model, PositiveDuration, TransformBase
from etl.spec.rules import Rule
from etl.spec.sigma import SigmaCorrelationHooks, SigmaSpec
from etl.spec.timebound import TimeBounds
from etl.spec.transform_hooks import (DedupeHooks, DeriveHooks, FilterHooks, EventTimeJoinHooks, GrokHooks, LookupHooks,
                                      ParseHooks, RouteHooks, SelectHooks, UnionHooks, WindowHooks)

# a column reference, or a generator, which cannot throw (etl.compile.transforms.columns reads select fields so)
PLAIN = re.compile(r"(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)(\.(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*|\*))*|\*")
GENERATOR = re.compile(r"\b(?:explode|explode_outer|posexplode|posexplode_outer|inline|inline_outer|stack|json_tuple)"
                       r"\s*\(", re.IGNORECASE)
_TR = "etl.compile.transforms"


@component("transform", "filter", builder=f"{_TR}.filter:build")
class FilterTransform(FilterHooks, TransformBase):
    """Keep, drop or tag events by a Spark SQL condition and/or a rule set."""

    type: Literal["filter"]
    expr: str | None = Field(default=None, description="Spark SQL condition, e.g. \"status >= 500\"")
    rules: list[Rule] | None = Field(default=None, description="inline rules")
    rule_files: list[str] = Field(default_factory=list, description="YAML files holding more rules (paths or globs)")
    sigma: SigmaSpec | None = Field(default=None,
                                    description="Sigma rule files (see docs/rules-and-sigma.md, \"Sigma rules\")")
    mode: Literal["keep", "drop", "tag", "alerts"] = Field(
        default="keep", description="keep matching events, drop them, keep all and tag each with the matched rule "
        "ids (and their metadata), or one row per (event, matched rule) with the rule's metadata")
    tag_field: str = Field(default="matched_rules", description="tag mode: array column of matched rule ids")
    tag_details: bool | None = Field(
        default=None, description="tag mode: the tag column holds the matched rules' metadata (rule, id, title, "
        "level, tags) instead of their ids; on by default for filters with `sigma`")
    reload: bool = Field(default=True, description="re-read rule files between micro-batches when they change")
    LOADS_RULES: ClassVar[bool] = True

    @model_validator(mode="after")
    def _something_to_test(self) -> FilterTransform:
        if self.expr is None and not self.has_rules:
            raise ValueError("a filter needs `expr`, `rules`, `rule_files` or `sigma`")
        if self.mode in ("tag", "alerts") and not self.has_rules:
            raise ValueError(f"{self.mode} mode needs rules to tag with")
        return self

    @property
    def has_rules(self) -> bool:
        return bool(self.rules or self.rule_files or self.sigma)

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        # an expr that throws; rules run by Python workers that may leave a row undecided (a regex gave up)
        return self.expr is not None or (self.has_rules and engines.get("rules") == "rules-python" and undecided)

    @property
    def details(self) -> bool:
        """Tag mode: does the tag column hold rule metadata (structs) rather than rule ids?"""
        return self.tag_details if self.tag_details is not None else self.sigma is not None


@component("transform", "derive", builder=f"{_TR}.columns:build_derive")
class DeriveTransform(DeriveHooks, TransformBase):
    """Add or replace columns computed by Spark SQL expressions."""

    type: Literal["derive"]
    columns: dict[str, str] = Field(min_length=1, description="new column -> Spark SQL expression")

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return True


@component("transform", "select", builder=f"{_TR}.columns:build_select")
class SelectTransform(SelectHooks, TransformBase):
    """Keep, rename or drop columns; `fields` entries may be expressions ("upper(x) AS y")."""

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


@component("transform", "grok", builder=f"{_TR}.grok:build")
class GrokTransform(GrokHooks, TransformBase):
    """Parse a text field with a grok pattern (%{NAME:field[:int|float]})."""

    CARRIES_FAILED_ROWS: ClassVar[bool] = True
    type: Literal["grok"]
    field: str = Field(description="text column to parse")
    pattern: str | list[str] = Field(description="grok pattern, e.g. '%{COMBINEDAPACHELOG}'; a list: several "
                                     "patterns tried in order (see break_on_match)")
    break_on_match: bool = Field(default=True, description="several patterns: true, the first one that matches "
                                 "gives the fields; false, every one that matches adds its fields (Logstash's "
                                 "break_on_match)")
    custom_patterns: dict[str, str] = Field(default_factory=dict, description="extra NAME -> regex definitions")
    patterns: Literal["legacy", "ecs-v1"] = Field(
        default="legacy", description="Logstash's pattern library: legacy (ecs_compatibility => disabled) or ecs-v1")
    overwrite: list[str] = Field(default_factory=list, description="captured fields that replace an input column "
                                 "of the same name (Logstash's overwrite) instead of making it a list")
    named_captures_only: bool = Field(default=True, description="false: %{NAME} without a field captures into NAME")
    keep_original: bool = Field(default=True, description="keep the parsed text column")
    target: str | None = Field(default=None, min_length=1, description="one struct column of this name holds the "
                               "captures (Logstash's target); a line that does not match gives NULL there and goes "
                               "on (SQL's GROK(field, pattern))")
    keep_empty_captures: bool = Field(default=False, description="an empty capture is '' (Logstash's "
                                      "keep_empty_captures); false: no value")
    on_error: Literal["dead_letter", "drop", "keep"] = Field(
        default="dead_letter", description="what to do with a line that does not match (with `target`: a value "
                                           "that does not convert, a line the regex gave up on)")

    def engine_aspects(self) -> tuple[str, ...]:
        return ("captures",)

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return self.on_error == "dead_letter"

    @field_validator("pattern")
    @classmethod
    def _some_pattern(cls, v: str | list[str]) -> str | list[str]:
        if isinstance(v, list) and not v:
            raise ValueError("give at least one pattern")
        return v

    @model_validator(mode="after")
    def _target_alone(self) -> GrokTransform:
        if self.target is not None and self.overwrite:
            raise ValueError("`overwrite` names input columns a capture replaces: with `target` the captures go "
                             "into a new struct column")
        return self


@component("transform", "dissect", builder=f"{_TR}.dissect:build")
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


class KvOptions(Model):
    pair_sep: str = Field(default=" ", min_length=1, description="separator between two pairs")
    kv_sep: str = Field(default="=", min_length=1, description="separator between a key and its value")


@component("transform", "parse", builder=f"{_TR}.parse:build")
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


@component("transform", "union", builder=f"{_TR}.union:build")
class UnionTransform(UnionHooks, TransformBase):
    """Merge several inputs with the same columns (by name)."""

    type: Literal["union"]
    PASSES_UPDATES: ClassVar[bool] = False


@component("transform", "route", builder=f"{_TR}.route:build")
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


@component("transform", "window", builder=f"{_TR}.window:build")
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


@component("transform", "sigma_correlation", builder=f"{_TR}.sigma_correlation:build")
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


@component("transform", "join", builder=f"{_TR}.join:build")
class JoinTransform(EventTimeJoinHooks, TransformBase):
    """Stream-stream join of two inputs (left, right) on keys within a time bound (inner or outer)."""

    type: Literal["join"]
    on: list[str] = Field(min_length=1, description="key columns present on both sides")
    how: Literal["inner", "left", "right", "full", "semi", "anti"] = Field(
        default="inner", description="inner, left, right or full (outer); semi: each left row with a match, once; "
        "anti: each left row without one (once the watermark passes its bound); both give the left columns only")
    within: TimeBounds = Field(description="right event time minus the left's: one duration (before or after, "
                               "e.g. '1m') or [lower, upper], e.g. ['-5m', '+1m']")
    condition: str | None = Field(default=None, description="Spark SQL condition besides the keys, over the join's "
                                  "output columns (right columns under their output names, e.g. clicks_ts)")
    left_time: EventTime | None = Field(default=None, description="the left input's event time (default: its source's)")
    right_time: EventTime | None = Field(default=None,
                                         description="the right input's event time (default: its source's)")
    JOIN_WORD: ClassVar[str] = "stream-stream"  # E321's "a stream-stream join needs event time"


@component("transform", "lookup", builder=f"{_TR}.lookup:build")
class LookupTransform(LookupHooks, TransformBase):
    """Enrich events from a dimension table (a static file or mysql source)."""

    type: Literal["lookup"]
    table: Identifier = Field(description="id of a static source (file with static: true, or mysql)")
    on: dict[str, str] = Field(min_length=1, description="event column -> table column")
    fields: list[str] | None = Field(default=None, description="table columns to add (all if absent)")
    how: Literal["inner", "left"] = Field(default="left",
        description="inner drops an event without a match, left keeps it with NULL table columns")
    store: Literal["auto", "broadcast", "rocksdb"] = Field(default="auto",
        description="where the table is kept: broadcast (memory), rocksdb (disk), auto chooses by its size")
    refresh: PositiveDuration | None = Field(default=None, description="reload the table this often")
    STATEFUL: ClassVar[bool] = True  # a query of its own, which reads its table's store
    STATE_WHY: ClassVar[str] = "several inputs"
    PASSES_UPDATES: ClassVar[bool] = False

    def engine_aspects(self) -> tuple[str, ...]:
        return ("store",)

    def input_ids(self) -> list[str]:
        return list(self.inputs) + [self.table]

    def table_input(self) -> str | None:
        return self.table


@component("transform", "dedupe", builder=f"{_TR}.dedupe:build")
class DedupeTransform(DedupeHooks, TransformBase):
    """Drop repeated events with the same keys within the watermark (keep: first), or keep each key's newest
    event by event time (keep: last: a row per key that got a newer event, an update stream)."""

    type: Literal["dedupe"]
    keys: list[str] = Field(min_length=1, description="columns whose equal values make a repeat")
    event_time: EventTime | None = Field(default=None,
        description="the event time whose watermark bounds the state (default: the input's)")
    keep: Literal["first", "last"] = Field(
        default="first", description="first: the first event per key, repeats dropped while the key is in state; "
        "last: after each micro-batch the key's newest event when it is newer than every earlier one (the state "
        "of a key ends when the watermark passes its newest event time)")
    STATEFUL: ClassVar[bool] = True
    WATERMARK_STATE: ClassVar[bool] = True
    PASSES_UPDATES: ClassVar[bool] = False
    EVENT_TIME_USE: ClassVar[str] = "state"

    def updates_keys(self) -> bool:
        return self.keep == "last"

    def update_keys(self) -> str:
        return ", ".join(self.keys)
