"""Shared pydantic base, typed durations and sizes, component bases."""

from __future__ import annotations

import re
import math
from typing import Annotated, Any, ClassVar

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler,
                      model_validator)
from pydantic_core import core_schema

from etl.diagnostics import short_repr
from etl.registry import required

ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*$"
Identifier = Annotated[str, Field(pattern=ID_PATTERN, min_length=1, max_length=128)]


class Model(BaseModel):
    """Base of every spec model: frozen, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)


MAX_DURATION_S = 365 * 86400  # the longest duration a pipeline may give (one year)
MAX_SIZE = 1024**5  # the largest size a pipeline may give (1 PiB)
MAX_INT64 = 2**63 - 1  # Spark's bigint
MIN_INT64 = -(2**63)


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
DURATION_PART = r"(\d+(\.\d+)?)\s*(ms|s|m|h|d)"


class _Written:
    """A value written as text in a pipeline (a duration, a size, a time): validated by the class's `parse`,
    serialized as its text."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.parse, serialization=core_schema.plain_serializer_function_ser_schema(str)  # type: ignore[attr-defined]
        )


class Duration(_Written, float):
    """A time span in seconds, written as "500ms", "10s", "5m", "1h", "1d" (or a number of seconds)."""

    @classmethod
    def parse(cls, value: Any) -> Duration:
        if isinstance(value, bool):
            raise ValueError("expected a duration such as '10s' or '5m'")
        if isinstance(value, (int, float)):
            return cls._bounded(value, value)
        if isinstance(value, str):
            m = _DURATION_RE.match(value)
            if m:
                return cls._bounded(float(m.group(1)) * _DURATION_UNITS[m.group(2)], value)
        raise ValueError(f"invalid duration {short_repr(value, 40)}: expected a number and a unit (ms, s, m, h, d), e.g. '10s'")

    @classmethod
    def _bounded(cls, seconds: float, given: Any) -> Duration:
        """Finite, not negative, at most MAX_DURATION_S (checked before any float conversion of a huge int)."""
        if isinstance(seconds, int) and not 0 <= seconds <= MAX_DURATION_S:
            seconds = -1 if seconds < 0 else math.inf
        if math.isnan(seconds):
            raise ValueError(f"invalid duration {short_repr(given, 40)}: not a number")
        if seconds < 0:
            raise ValueError(f"invalid duration {short_repr(given, 40)}: a duration cannot be negative")
        if seconds > MAX_DURATION_S:
            raise ValueError(f"invalid duration {short_repr(given, 40)}: at most 365d")
        return cls(float(seconds))

    @property
    def seconds(self) -> float:
        return float(self)

    @property
    def millis(self) -> int:
        return int(round(float(self) * 1000))

    def spark(self) -> str:
        """Spark interval text, e.g. '10 seconds'."""
        ms = self.millis
        if ms % 1000:
            return f"{ms} milliseconds"
        return f"{ms // 1000} seconds"

    def __str__(self) -> str:
        ms = self.millis
        for unit, scale in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
            if ms and ms % scale == 0:
                return f"{ms // scale}{unit}"
        return f"{ms}ms"

    __repr__ = __str__

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: GetJsonSchemaHandler) -> dict:
        return {
            "anyOf": [
                {"type": "string", "pattern": rf"^\s*{DURATION_PART}\s*$"},
                {"type": "number", "minimum": 0, "maximum": MAX_DURATION_S},
            ],
            "description": "duration: a number and a unit (ms, s, m, h, d), e.g. '10s'",
        }


_SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?\s*$", re.IGNORECASE)


class Size(_Written, int):
    """A byte count, written as "64MB", "512KiB", "1GB" (or a number of bytes)."""

    @classmethod
    def parse(cls, value: Any) -> Size:
        if isinstance(value, bool):
            raise ValueError("expected a size such as '64MB'")
        if isinstance(value, int):
            return cls._bounded(value, value)
        if isinstance(value, str):
            m = _SIZE_RE.match(value)
            if m:
                n = float(m.group(1)) * _SIZE_UNITS[(m.group(2) or "").lower()]
                return cls._bounded(int(n) if math.isfinite(n) else MAX_SIZE + 1, value)
        raise ValueError(f"invalid size {short_repr(value, 40)}: expected a number and a unit (B, KB, MB, GB, KiB, MiB, GiB), "
                         "e.g. '64MB'")

    @classmethod
    def _bounded(cls, n: int, given: Any) -> Size:
        if n < 0:
            raise ValueError(f"invalid size {short_repr(given, 40)}: a size cannot be negative")
        if n > MAX_SIZE:
            raise ValueError(f"invalid size {short_repr(given, 40)}: at most 1PiB")
        return cls(n)

    def __str__(self) -> str:
        n = int(self)
        for unit, scale in (("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
            if n and n % scale == 0:
                return f"{n // scale}{unit}"
        return f"{n}B"

    __repr__ = __str__

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: GetJsonSchemaHandler) -> dict:
        return {
            "anyOf": [
                {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*([kKmMgG][iI]?[bB]|[bB])?\s*$"},
                {"type": "integer", "minimum": 0, "maximum": MAX_SIZE},
            ],
            "description": "size in bytes: a number and a unit (B, KB, MB, GB, KiB, MiB, GiB), e.g. '64MB'",
        }


def _positive(d: Duration) -> Duration:
    if d.millis < 1:
        raise ValueError(f"invalid duration {d}: must be at least 1ms")
    return d


PositiveDuration = Annotated[Duration, AfterValidator(_positive)]


class Instant(_Written, str):
    """A point in time written in ISO 8601 ("2026-01-01T00:00:00Z"; no zone: UTC), kept as its text."""

    @classmethod
    def parse(cls, value: Any) -> Instant:
        from etl.spec.generated import parse_time

        if isinstance(value, str):
            try:
                parse_time(value)
                return cls(value)
            except ValueError:
                pass
        raise ValueError(f"invalid time {short_repr(value, 40)}: expected ISO 8601, e.g. '2026-01-01T00:00:00Z'")

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: GetJsonSchemaHandler) -> dict:
        return {"type": "string", "format": "date-time", "description": "ISO 8601 time, e.g. 2026-01-01T00:00:00Z"}


class EventTime(Model):
    """Which column carries event time, and how late events may arrive."""

    field: str = Field(description="timestamp column (or epoch milliseconds) holding event time")
    watermark: Duration = Field(description="allowed lateness, e.g. '30s'")


class Component(Model):
    """Fields every source, transform and sink has, and the hooks the rest of etl calls on a component.

    `output_columns(cx, node, inputs)`: the node's columns (name -> Spark type, in order) from its inputs'
    (`inputs`: [(edge, columns or None)]), or None when unknown; it checks every column the component
    reads and reports through `cx`, the column pass (etl.graph.columns.ColumnPass: need, expr, internal,
    span, key_span, inner, check_types, event_time_field, aggregate_input, where, first, find, guess_type, report,
    graph).
    `explain_lines()`: what the component does, one short line each, for `etl explain`."""

    KIND: ClassVar[str] = ""
    # Traits: what the core (graph checks, physical planner, drain, delivery, explain) asks of a component, never its
    # type. A plugin sets the ones that differ from these defaults.
    # keeps state across micro-batches: heads a streaming query of its own (etl.physical.grouping); see is_stateful()
    STATEFUL: ClassVar[bool] = False
    # its state is closed by the watermark: a drained checkpoint cannot run it again (E408, etl.compile.drain)
    WATERMARK_STATE: ClassVar[bool] = False
    # what explain says heads its streaming plan when it is stateful (etl.physical.planner)
    STATE_WHY: ClassVar[str] = "state in RocksDB"
    # engines of its own (etl.physical.engines.Engine), picked beside etl's for the aspects of engine_aspects()
    ENGINES: ClassVar[tuple[Any, ...]] = ()
    # `etl explain` shows where it runs beside its own engines (a source's reader, a parse's parser)
    RUN_WITH_ENGINES: ClassVar[bool] = False
    # the field naming a local file path it reads or writes: checked for NUL (E102), the lookup-table path guard and
    # a sink writing into a watched folder (etl.graph.checks)
    PATH_FIELD: ClassVar[str | None] = None
    # Maven coordinates (group:artifact:version) of the JVM jars its builder needs on Spark's classpath: when
    # java/lib has no connector jars, `etl run` has Spark's Ivy fetch them (spark.jars.packages, etl.runtime.session)
    JARS: ClassVar[tuple[str, ...]] = ()
    # the connector names a SQL script's CREATE TABLE ... WITH (type = '...') (or connector = '...') declares it with,
    # as rsqldb and Flink spell them (case-insensitive), and the "module:function" mapping the table's WITH options
    # onto its spec (etl.sql.connectors.map_table; None: only the spec's own field names are taken)
    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ()
    SQL_OPTIONS: ClassVar[str | None] = None
    # Spark's real-time mode can run it (`trigger: {mode: realtime}`, etl.graph.realtime): a source Spark reads in
    # that mode, a transform compiled to Spark expressions only (its Python engines aside); a sink says how it is
    # written instead (SinkBase.REALTIME_WRITER)
    REALTIME: ClassVar[bool] = False
    id: Identifier = Field(description="unique id, referenced by other components' inputs")
    type: str
    description: str | None = Field(default=None, description="free text about the component, for its readers")

    def input_ids(self) -> list[str]:
        return []

    def https_lines(self) -> list[str]:
        """Explain lines for a connection this component makes over HTTPS (etl.plan.transport: `security` and `tls`
        fields are read by their names; secrets as `***`)."""
        return []

    def table_input(self) -> str | None:
        """The id of the static table this component reads whole (a lookup's `table`), or None."""
        return None

    @classmethod
    def raw_refs(cls, item: dict) -> tuple[tuple[str, ...] | None, str | None]:
        """From the raw mapping of a component that did not validate: its output labels (None: unknown)
        and its static table id, so references to it still resolve (etl.check placeholders)."""
        return None, None

    # its rows are always updates of keys (a continuous aggregate); see updates_keys()
    UPDATES_KEYS: ClassVar[bool] = False

    def updates_keys(self) -> bool:
        """Are its rows updates of keys (a continuous aggregate or TopN, a keep-last dedupe, an updating window)?"""
        return self.UPDATES_KEYS

    def is_stateful(self) -> bool:
        """Keeps state across micro-batches (STATEFUL; a component whose fields decide overrides it)."""
        return self.STATEFUL

    def engine_aspects(self) -> tuple[str, ...]:
        """The aspects the physical planner picks an engine for (etl.physical.engines: `captures`, `window`, ...)."""
        return ()

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        """Does it write rows it cannot process to the dead-letter sink (with its stage and reason)? `engines`: its
        chosen engines per aspect; `undecided`: its rule program may leave a row undecided (etl.physical.failing)."""
        return False

    def event_time_out(self) -> bool | None:
        """Whether its output carries event time with a watermark whatever its inputs (True, False), or as its inputs
        do (None) (etl.graph.checks.has_event_time)."""
        return None

    def input_times(self) -> tuple[Any, ...] | None:
        """Event times it declares per input (None entries: the input's own), or None: none (a join's left/right)."""
        return None

    def endpoint_problems(self) -> list[tuple[tuple, Any, str]]:
        """What is wrong with the servers and names it connects to: (field keys, value, why) (E102)."""
        return []

    @required
    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        return cx.first(inputs)

    @required
    def explain_lines(self) -> list[str]:
        return []


class SourceBase(Component):
    KIND: ClassVar[str] = "source"
    RUN_WITH_ENGINES: ClassVar[bool] = True
    STATIC: ClassVar[bool] = False  # always a static table (read whole for lookups), whatever its fields
    # events arrive as they happen (a broker): event times are bounded by now + ETL_EVENT_TIME_HORIZON, not by the
    # fixed horizon of replayed input (etl.compile.watermark)
    LIVE: ClassVar[bool] = False
    # reading one of its micro-batches again gives the same rows (a log's offsets, a seeded generator): a stage's dead
    # letters may then be read from the batch again rather than cached (etl.compile.Compiler.evaluate); a file may
    # change between two reads (a copytruncate), so a file source's batch is cached instead
    REREADS_EXACTLY: ClassVar[bool] = False
    # can be read whole as a lookup's table (a SQL dimension table: FOR SYSTEM_TIME AS OF, etl.sql.build)
    LOOKUP_TABLE: ClassVar[bool] = False
    # the field naming the server it reads from: an unreachable server's failure points at it (E407,
    # etl.runtime.failure)
    SERVER_FIELD: ClassVar[str | None] = None
    # fields holding a regular expression (a topic pattern): each must compile (E300, etl.graph.checks)
    REGEX_FIELDS: ClassVar[tuple[str, ...]] = ()
    schema_: dict[str, str] | None = Field(
        default=None,
        alias="schema",
        description="declared columns: name -> Spark SQL type (string, int, bigint, double, boolean, timestamp, ...)",
    )
    event_time: EventTime | None = Field(default=None,
        description="the event-time column and its watermark (windows, joins and dedupe use them)")

    def is_static(self) -> bool:
        """A bounded table read for lookup joins, not a stream."""
        return self.STATIC

    def is_replayable(self) -> bool:
        """Spark can re-read the same data after a crash (offsets are checkpointed)."""
        return True

    def files_read_once(self) -> str | None:
        """The path (file, folder or glob) of files a streaming source reads once each, by name, when they appear:
        the run watches them for renames, appends, truncation and recreation it will not handle
        (etl.runtime.file_watch)."""
        return None

    def declared_columns(self) -> dict[str, str] | None:
        """Columns this source produces, when known without running it."""
        return self.schema_

    def lookup_table_problem(self) -> tuple[str, str] | None:
        """(why, hint) when this static source cannot be read as a lookup table; None when it can."""
        return None

    def sampled_columns(self, cx: Any, node: Any) -> dict[str, str] | None:
        """Columns inferred from a sample of the data when none are declared (cx.inferred_columns), or None."""
        return None

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        cx.check_types(node, self.schema_)
        for name in self.schema_ or {}:
            cx.internal(node, name, cx.key_span(node, "schema", name))
        for key in ("text_column", "value_column"):
            if cx.smap is not None and cx.smap.has(node.path + (key,)):
                cx.internal(node, getattr(self, key, None), cx.span(node, key))
        cols = self.declared_columns()
        cols = dict(cols) if cols is not None else self.sampled_columns(cx, node)
        if self.event_time is not None:
            cx.event_time_field(node, ("event_time", "field"), self.event_time.field, cols)
        return cols

    def explain_lines(self) -> list[str]:
        bits = []
        if self.event_time is not None:
            bits.append(f"event time {self.event_time.field} (watermark {self.event_time.watermark})")
        if self.is_static():
            bits.append("static table")
        return [", ".join(bits)] if bits else []


class _WithInputs(Component):
    inputs: list[str] = Field(default_factory=list, description="ids of upstream components (or 'route_id.label')")

    @model_validator(mode="before")
    @classmethod
    def _input_alias(cls, data: Any) -> Any:
        # `input: x` is shorthand for `inputs: [x]`; with both given, `input` stays
        # and is reported as an unknown key.
        if isinstance(data, dict) and "input" in data and "inputs" not in data:
            data = dict(data)
            value = data.pop("input")
            data["inputs"] = [value] if isinstance(value, str) else value
        elif isinstance(data, dict) and isinstance(data.get("inputs"), str):
            data = {**data, "inputs": [data["inputs"]]}  # `inputs: x` reads as `inputs: [x]`
        return data

    def input_ids(self) -> list[str]:
        return list(self.inputs)


class TransformBase(_WithInputs):
    KIND: ClassVar[str] = "transform"
    # one row out per row in, every input column kept, a failure a reason in its shared frame (never a throw, never a
    # dropped row): as a source's first stage, with on_error dead_letter, it carries the source's failed rows to its
    # own dead-letter split, so the source's micro-batch is read once (etl.compile.Compiler.carrier)
    CARRIES_FAILED_ROWS: ClassVar[bool] = False
    # reads filter rules (inline, rule files, Sigma files) that etl.check loads into graph.rules before its checks
    LOADS_RULES: ClassVar[bool] = False
    # runs the Sigma correlation rules of the filter it reads (explain lists them; W340 when none reads a filter's)
    RUNS_CORRELATIONS: ClassVar[bool] = False
    # rows of an input that updates keys stay updates through it (row by row: filter, derive, select, ...)
    PASSES_UPDATES: ClassVar[bool] = True
    # how it uses event time, for the checks of etl.graph.checks.check_event_time: "" (not), "window" (an event-time
    # window: E320 without event time upstream), "processing" (a processing-time window: E320 with event time
    # upstream), "join" (every input needs event time: E321), "state" (state bounded by a watermark: E321); see
    # event_time_use()
    EVENT_TIME_USE: ClassVar[str] = ""

    def event_time_use(self) -> str:
        return self.EVENT_TIME_USE

    def event_time_out(self) -> bool | None:
        return False if self.updates_keys() else None

    def update_keys(self) -> str:
        """The keys its updates are keyed by, for explain's delivery lines (etl.plan.delivery.changes_for)."""
        return ", ".join(getattr(self, "group_by", None) or ()) or "one global row"

    def update_flags(self) -> tuple[str, ...]:
        """The flag columns of its updates (none: every row is its key's newest, appended as such)."""
        return ()

    def paced_every(self) -> Any:
        """How often a key's updated row goes out (a continuous aggregate's `every`), or None: each micro-batch."""
        return None

    def grouped_by_expressions(self) -> tuple[str, ...]:
        """Grouping expressions that may throw on a row: those rows get a dead-letter query of their own."""
        return ()


class Retry(Model):
    max_attempts: int = Field(default=8, ge=1, le=1000, description="attempts before the query fails")
    initial_backoff: Duration = Field(default=Duration(0.2),
                                      description="wait before the first retry; doubled after each attempt")
    max_backoff: Duration = Field(default=Duration(10.0), description="longest wait between two attempts")


class SinkBase(_WithInputs):
    KIND: ClassVar[str] = "sink"
    batch_size: int = Field(default=1000, ge=1, le=10_000_000, description="rows per write call")
    flush_interval: Duration = Field(default=Duration(1.0), description="flush buffered rows at least this often")
    max_buffer: Size = Field(default=Size(64 * 1000**2), description="flush when buffered rows exceed this size")
    retry: Retry = Field(default_factory=Retry, description="how a transient write error is retried")

    # How a replayed micro-batch is handled, for `etl explain`: for an idempotent sink, how it keeps the
    # batch from being written twice; for another, what it still does about replays (None: nothing).
    REPLAY: ClassVar[str | None] = None
    # Why the sink must write on the driver (etl.physical's `write` aspect); None: each partition of a
    # micro-batch is written on its executor (etl.runtime.partitions).
    DRIVER_ONLY: ClassVar[str | None] = None
    # How the sink writes a micro-batch with Spark's own file writers (etl.physical's `spark-writer`); None:
    # a sink instance per partition writes it.
    SPARK_WRITER: ClassVar[str | None] = None
    # "module:function" writing a real-time mode query's rows with Spark's own sink (etl.runtime.realtime); None:
    # the sink cannot be written in real-time mode (foreachBatch is not run there)
    REALTIME_WRITER: ClassVar[str | None] = None

    def is_idempotent(self) -> bool:
        """A replayed micro-batch can be written again without duplicates."""
        return False

    def replay_note(self) -> str | None:
        return self.REPLAY

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        """A sink's rows are its input's; a sink reading columns (keys, ids) checks them here."""
        return cx.first(inputs)

    def explain_lines(self) -> list[str]:
        return []

    def output_key(self) -> str | None:
        """A resource this sink writes (path, table, topic); two sinks may not share one."""
        return None

    @classmethod
    def keyed_mapping(cls, raw: dict) -> bool:
        """From the raw mapping a SQL script builds for this sink: does a later row replace a key's earlier one (an
        upsert), rather than being appended? (The SQL front end keeps a continuous aggregate's flag columns otherwise.)"""
        return False

    def upsert_key(self) -> str | None:
        """What a later row replaces an earlier one by (a key), for updating inputs; None: rows are appended."""
        return None
