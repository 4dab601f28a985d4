"""Window aggregates: one table of what each aggregate function is, read by every layer.

Each entry says, for one `fn` of a window's `aggregates`:

* whether it needs a `field` and an `n` (the spec validates them);
* its output type from its input column's type (column propagation);
* its Spark expression (the native window engine, etl.compile.windows.native), built
  from `pyspark.sql.functions` passed in, so this module imports no pyspark;
* its accumulator for the state engine (etl.compile.windows.state): a new one,
  adding a value, merging two (session windows), the result.

Meaning (both engines): count counts rows (or non-null values of `field`);
sum/avg/min/max ignore nulls (NULL when there is none; an overflowing sum is
NULL for its window); count_distinct is exact, approx_count_distinct is
HyperLogLog++ natively (exact in the state engine); collect_list keeps values
in event-time order (ties by value), collect_set the sorted distinct values;
first/last the value of the earliest/latest event (ties by value); top_n the n
largest values, largest first.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterator

_INTEGRAL = ("int", "bigint", "long", "smallint", "tinyint")


def _sum_type(t: str) -> str:
    return "bigint" if t in _INTEGRAL else ("double" if t != "unknown" else "unknown")


@dataclass(frozen=True)
class AggregateFn:
    name: str
    output_type: Callable[[str], str]  # input column type -> output type
    # Spark: (F, value column, ordering struct (event time, value), n, element type thunk) -> Column
    spark: Callable[..., Any]
    new: Callable[[], Any]  # state engine: an empty accumulator
    add: Callable[[Any, int, Any, int | None], Any]  # (acc, event ms, value, n) -> acc
    merge: Callable[[Any, Any, int | None], Any]  # (acc, acc, n) -> acc, both non-empty or None-aware
    result: Callable[[Any], Any]
    needs_field: bool = True
    needs_n: bool = False


def _keep(x: Any, y: Any, pick: Callable[[Any, Any], Any]) -> Any:
    return y if x is None else x if y is None else pick(x, y)


def _add_top(acc: list, v: Any, n: int | None) -> list:
    if len(acc) < (n or 0):
        heapq.heappush(acc, v)
    elif v > acc[0]:
        heapq.heapreplace(acc, v)
    return acc


def _merge_top(x: list, y: list, n: int | None) -> list:
    out = heapq.nlargest(n or 0, x + y)[::-1]
    heapq.heapify(out)
    return out


def _set_add(acc: set, ms: int, v: Any, n: int | None) -> set:
    acc.add(v)
    return acc


def _list_add(acc: list, ms: int, v: Any, n: int | None) -> list:
    acc.append((ms, v))
    return acc


def _set(name: str, spark: Callable[..., Any], result: Callable[[set], Any], out: Callable[[str], str]) -> AggregateFn:
    return AggregateFn(name, out, spark, set, _set_add, lambda x, y, n: x | y, result)


def _ordered(name: str, pick: Callable[[Any, Any], Any], spark: Callable[..., Any]) -> AggregateFn:
    return AggregateFn(name, lambda t: t, spark, lambda: None,
                       lambda a, ms, v, n: (ms, v) if a is None else pick(a, (ms, v)),
                       lambda x, y, n: _keep(x, y, pick), lambda a: None if a is None else a[1])


def _extreme(name: str, pick: Callable[[Any, Any], Any]) -> AggregateFn:
    return AggregateFn(name, lambda t: t, lambda F, v, o, n, et: getattr(F, name)(v), lambda: None,
                       lambda a, ms, v, n: v if a is None else pick(a, v),
                       lambda x, y, n: _keep(x, y, pick), lambda a: a)


AGGREGATES: dict[str, AggregateFn] = {a.name: a for a in (
    AggregateFn("count", lambda t: "bigint", lambda F, v, o, n, et: F.count(v), lambda: 0,
                lambda a, ms, v, n: a + 1, lambda x, y, n: x + y, lambda a: a, needs_field=False),
    AggregateFn("sum", _sum_type, lambda F, v, o, n, et: F.try_sum(v), lambda: None,
                lambda a, ms, v, n: v if a is None else a + v, lambda x, y, n: _keep(x, y, lambda p, q: p + q),
                lambda a: a),
    AggregateFn("avg", lambda t: "double", lambda F, v, o, n, et: F.try_avg(v), lambda: [0, 0],
                lambda a, ms, v, n: [a[0] + v, a[1] + 1], lambda x, y, n: [x[0] + y[0], x[1] + y[1]],
                lambda a: None if a[1] == 0 else a[0] / a[1]),
    _extreme("min", min),
    _extreme("max", max),
    _set("count_distinct", lambda F, v, o, n, et: F.size(F.collect_set(v)).cast("bigint"), len, lambda t: "bigint"),
    _set("approx_count_distinct", lambda F, v, o, n, et: F.approx_count_distinct(v), len, lambda t: "bigint"),
    AggregateFn("collect_list", lambda t: f"array<{t}>",
                lambda F, v, o, n, et: F.transform(F.array_sort(F.collect_list(o)), lambda x: x["v"]), list,
                _list_add, lambda x, y, n: x + y, lambda a: [v for _, v in sorted(a)]),
    _set("collect_set", lambda F, v, o, n, et: F.array_sort(F.collect_set(v)), sorted, lambda t: f"array<{t}>"),
    _ordered("first", min, lambda F, v, o, n, et: F.min_by(v, o)),
    _ordered("last", max, lambda F, v, o, n, et: F.max_by(v, o)),
    AggregateFn("top_n", lambda t: f"array<{t}>",
                lambda F, v, o, n, et: F.coalesce(F.max_by(v, v, F.lit(int(n))), F.array().cast(et())), list,
                lambda a, ms, v, n: _add_top(a, v, n), _merge_top, lambda a: sorted(a, reverse=True), needs_n=True),
)}

NAMES: tuple[str, ...] = tuple(AGGREGATES)


def output_type(fn: str, in_type: str) -> str:
    """The type of aggregate `fn` over a column of `in_type` ("unknown" when either is unknown)."""
    entry = AGGREGATES.get(fn)
    return entry.output_type(in_type) if entry is not None else in_type


# the column types the state engine's accumulators keep (etl.compile.windows.state): others are E404
STATE_FIELD_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "string", "boolean", "timestamp")


def state_engine_why(spec: Any) -> str | None:
    """Why a window needs the state engine (None: Spark's native aggregation runs it)."""
    python = any(a.fn not in AGGREGATES for a in spec.aggregates)
    if spec.emit.early is not None or spec.emit.late != "drop" or python:
        return "with early emission, late dead letters or Python aggregates"
    return None


def checked_aggregates(cx: Any, node: Any, cols: dict[str, str] | None,
                       aggregates: Any, state_why: str | None = None) -> Iterator[tuple[int, Any, str, Any]]:
    """Per aggregate of a window or continuous aggregate, its `as` and `field` checked against the input columns
    `cols`: (index, aggregate, the type of the column it reads, the pipeline's Python aggregate function it names
    or None; a name neither built in nor a function is reported). `state_why`: the node runs on the state
    engine (why), whose accumulators keep STATE_FIELD_TYPES only."""
    for i, agg in enumerate(aggregates):
        cx.internal(node, agg.as_, cx.span(node, "aggregates", i, "as"))
        src = None
        if agg.field is not None and agg.field != "*":
            src = cx.need(cols, agg.field, cx.span(node, "aggregates", i, "field"),
                          cx.where(node, f"aggregates[{i}].field"))
        in_type = cols.get(src, "unknown") if (cols is not None and src) else "unknown"
        cx.aggregate_input(node, i, agg.fn, in_type)
        if state_why is not None and src and in_type != "unknown" and in_type not in STATE_FIELD_TYPES:
            cx.report.error("E404", f"{node.type} '{node.id}': aggregate {agg.fn} over '{agg.field}' ({in_type}): "
                            f"{state_why}, aggregate fields must be top-level numbers, strings, booleans or "
                            "timestamps", cx.span(node, "aggregates", i, "field"),
                            "aggregate a column of one of those types (cast it, or count(*) instead of count of it)")
        yield i, agg, in_type, cx.aggregate_function(node, ("aggregates", i, "fn"), agg.fn)
