"""Event time columns and watermarks.

A source's event time, and one a transform declares itself (bound_declared), is bounded by a horizon (a shared frame's rows, see etl.compile.deadletter): a row whose
event time lies beyond it is a dead letter ("event time beyond the horizon") and its event time is NULL before the
watermark, which therefore never moves past the horizon. Live sources (a spec's LIVE: kafka, rocketmq): the
micro-batch's time plus ETL_EVENT_TIME_HORIZON (1d). Other input (files, replayed at any pace, any dates):
BOUNDED_HORIZON, which keeps every window, session and join buffer below the drain sentinel's watermark, so
`--drain` flushes them all."""

from __future__ import annotations

from typing import Any

from etl import settings
from etl.compile.context import ERR, PAYLOAD, CompileError
from etl.graph.model import Node
from etl.physical.failing import declared_event_times

NUMERIC = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")
# the drain sentinel (etl.compile.drain.SENTINEL_TIME, 9999-01-01) minus 9 years: more than the largest window
# size, session gap, watermark delay and allowed lateness etl accepts (each at most 365d) together
BOUNDED_HORIZON = "9990-01-01T00:00:00Z"
BEYOND = "event time beyond the horizon"


def with_event_time(df: Any, node: Node, et: Any) -> Any:
    """Declare `et.field` as event time with `et.watermark` lateness; epoch milliseconds become timestamps."""
    from pyspark.sql import functions as F

    types = dict(df.dtypes)
    if et.field not in types:
        raise CompileError(f"event time column '{et.field}' of '{node.id}' does not exist", node, "event_time",
                           f"columns: {', '.join(df.columns)}", code="E320")
    t = types[et.field]
    if t not in NUMERIC + ("timestamp", "timestamp_ntz"):
        raise CompileError(f"event time column '{et.field}' of '{node.id}' is {t}, not a timestamp", node,
                           "event_time", "declare it as `timestamp` in the schema, or derive one", code="E320")
    if df.isStreaming and ERR in df.columns:
        df = _bounded(df, et.field, t in NUMERIC, bool(getattr(node.spec, "LIVE", False)))
    elif t in NUMERIC:
        df = df.withColumn(et.field, F.timestamp_millis(F.col(et.field)))
    if not df.isStreaming:
        return df
    from etl.compile.drain import watermarked

    return watermarked(df, et.field, et.watermark.spark())


def bound_declared(graph: Any, pipeline: str, node: Node, inputs: list[Any]) -> tuple[list[Any], Any]:
    """A transform's streaming inputs without the rows whose event time, as the transform declares it (etl.physical.
    failing.declared_event_times), lies beyond the horizon -- live when a source upstream is -- and those rows as
    the transform's dead letters (one streaming frame, None: nothing declared): the same bound as a source's, so
    they never move its watermark. (Bounded input: the query of its root finds those rows too, beyond_rows.)"""
    from etl.compile.deadletter import ok_frame

    live = any(getattr(s.spec, "LIVE", False) for s in graph.upstream_sources(node.id))
    out, dead = list(inputs), None
    for i, shared in _declared(pipeline, node, inputs, live, streaming=True):
        out[i] = ok_frame(shared)
        dead = _union(dead, shared, pipeline, node.id)
    return out, dead


def beyond_rows(pipeline: str, node: Node, inputs: list[Any]) -> Any:
    """The dead letters of `node`'s input rows (one micro-batch of bounded input, its root's query) whose declared
    event time lies beyond the constant horizon: the rows the node's streaming plan drops (bound_declared), the
    same for every query (etl.physical.failing.horizon_root). None: nothing declared."""
    dead = None
    for _, shared in _declared(pipeline, node, inputs, False, streaming=False):
        dead = _union(dead, shared, pipeline, node.id)
    return dead


def _declared(pipeline: str, node: Node, inputs: list[Any], live: bool, streaming: bool) -> list[tuple[int, Any]]:
    """(input index, its shared frame with the rows beyond the horizon failed) for each declared event time."""
    from etl.compile.deadletter import as_shared

    out = []
    for i, et in declared_event_times(node):
        df = inputs[i] if i < len(inputs) else None
        t = dict(df.dtypes).get(et.field) if df is not None and df.isStreaming == streaming else None
        if t not in NUMERIC + ("timestamp", "timestamp_ntz"):  # (a missing or mistyped column: with_event_time's E320)
            continue
        out.append((i, _bounded(as_shared(df), et.field, t in NUMERIC, live)))
    return out


def _union(dead: Any, shared: Any, pipeline: str, stage: str) -> Any:
    from etl.compile.deadletter import dead_frame

    failed = dead_frame(shared, pipeline, stage)
    return failed if dead is None else dead.unionByName(failed)


def horizon(live: bool) -> tuple[Any, str]:
    """(the horizon as a Spark timestamp expression, as the dead letters' reason names it)."""
    from pyspark.sql import functions as F

    if not live:
        return F.lit(BOUNDED_HORIZON).cast("timestamp"), BOUNDED_HORIZON
    seconds = settings.current().event_time_horizon_s
    # current_timestamp() is the micro-batch's time, kept in the offset log: a replayed batch gets the same horizon
    return F.timestamp_millis(F.unix_millis(F.current_timestamp()) + F.lit(int(seconds * 1000))), \
        f"the micro-batch's time + {_duration(seconds)}"


def _duration(seconds: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= n and seconds % n == 0:
            return f"{int(seconds // n)}{unit}"
    return f"{int(seconds * 1000)}ms"


def _bounded(shared: Any, field: str, millis: bool, live: bool) -> Any:
    """`shared` (a stage's rows with ERR and PAYLOAD) with `field` as a timestamp, rows beyond the horizon failed
    with their row as payload and their event time NULL (the watermark ignores it)."""
    from pyspark.sql import functions as F

    at, named = horizon(live)
    raw = F.col(f"`{field}`")
    ts = F.timestamp_millis(raw) if millis else raw
    beyond = F.coalesce(raw > F.unix_millis(at) if millis else raw > at, F.lit(False))
    fresh = F.col(ERR).isNull() & beyond
    row = F.to_json(F.struct(*[F.col(f"`{c}`") for c in shared.columns if c not in (ERR, PAYLOAD)]))
    return shared.withColumns({
        ERR: F.when(fresh, F.lit(f"{BEYOND}: {field} is after {named}")).otherwise(F.col(ERR)),
        PAYLOAD: F.when(fresh, row).otherwise(F.col(PAYLOAD)),
        field: F.when(beyond, F.lit(None)).otherwise(ts),
    })
