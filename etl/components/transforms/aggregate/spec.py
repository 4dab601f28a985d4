"""Continuously updated results: the `aggregate` transform (a GROUP BY without a window).

An `aggregate` keeps, per `group_by` key, the accumulators of its `aggregates` (the
window's functions, etl.spec.aggregates) in the state store, for ever (there is no window
to close: the number of keys bounds the state). After each micro-batch it writes one row
per key the batch changed, with the key's new values: an update stream, keyed by
`group_by`. Flag columns after the aggregates say how to read a row:

* `_update` (boolean): false for the first row of a key, true for a later one (it replaces
  the key's previous row; with `having`, the previous values may have been held back by it);
* `_retract` (boolean, with `having` only): the key's new values fail `having` while a
  row went out for it before: delete the key.

A pipeline's Python aggregate function (`functions:`, kind aggregate) keeps every value of the key
in the state (it runs on all of them, as a pandas Series, after each micro-batch that changed the
key); when it raises, the key's row of that batch is a dead letter and the batch's rows of the key
are left out of its state (etl.components.transforms.aggregate.build).

A sink keyed by the group (mysql `mode: upsert` with `key`, elasticsearch `id_fields`,
kafka `key`) keeps the latest row of each key; an append-only sink gets every row, a
changelog: `etl explain` says which (etl.plan.delivery.changes_for).

With `every`, the queries reading the aggregate run a micro-batch at most that often (their processing-time
trigger, etl.physical.grouping.paced_by, when longer than the pipeline's): one row per changed key per
micro-batch is then at most one row per key per `every`, with the key's latest values, and nothing is held
in state or left unsent (an AvailableNow run, --once / --drain, reads everything at once as always)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from etl.components.transforms.window.spec import Aggregate
from etl.registry import component
from etl.spec.continuous import RETRACT, UPDATE
from etl.spec.aggregates import AGGREGATES, checked_aggregates, output_type
from etl.spec.base import PositiveDuration, TransformBase


class AggregateHooks:
    def flag_columns(self: Any) -> tuple[str, ...]:
        return (UPDATE, RETRACT) if self.having else (UPDATE,)

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        cols = cx.first(inputs)
        out: dict[str, str] = {}
        for i, g in enumerate(self.group_by):
            src = cx.need(cols, g, cx.span(node, "group_by", i), cx.where(node, f"group_by[{i}]"))
            out[src or g] = cols[src] if (cols is not None and src) else "unknown"
        for _i, agg, in_type, udaf in checked_aggregates(cx, node, cols, self.aggregates, "in a continuous aggregate"):
            out[agg.as_] = udaf.returns if udaf is not None else output_type(agg.fn, in_type)
        if self.having is not None:
            cx.expr(node, ("having",), self.having, out, cx.where(node, "having"))
        if cols is None:
            return None
        out.update(dict.fromkeys(self.flag_columns(), "boolean"))
        return out

    def explain_lines(self: Any) -> list[str]:
        out = ["continuous: one row per changed key after each micro-batch (updates keyed by "
               + (", ".join(self.group_by) or "the one global group") + ")"]
        if self.group_by:
            out.append("group by: " + ", ".join(self.group_by))
        out.append("aggregates: " + ", ".join(f"{a.as_} = {a.fn}({a.field or '*'}" + (f", {a.n}" if a.n else "")
                                              + ")" for a in self.aggregates))
        python = [a.fn for a in self.aggregates if a.fn not in AGGREGATES]
        if python:
            out.append(f"python aggregates ({', '.join(python)}): each key's values kept in its state, the function "
                       "run on them after each micro-batch that changed the key (raising: that row is a dead letter)")
        if self.having:
            out.append(f"having: {self.having} (a key that fails it after a row went out: _retract)")
        if self.every is not None:
            out.append(f"every: {self.every} (a micro-batch at most every {self.every}: a key's row at most that often)")
        return out


@component("transform", "aggregate", builder="etl.components.transforms.aggregate.build:build")
class AggregateTransform(AggregateHooks, TransformBase):
    """A continuously updated aggregate per key (no window): an update row per changed key per micro-batch."""

    type: Literal["aggregate"]
    group_by: list[str] = Field(default_factory=list, description="key columns (none: one global group)")
    aggregates: list[Aggregate] = Field(min_length=1, description="what each key's row computes: [{fn, field, as, n}]")
    having: str | None = Field(default=None, description="Spark SQL condition over group and aggregate columns")
    every: PositiveDuration | None = Field(
        default=None, description="at most one row per key this often: the queries reading the aggregate run a "
                                  "micro-batch at most this often (processing time)")
    STATEFUL: ClassVar[bool] = True
    UPDATES_KEYS: ClassVar[bool] = True

    def update_flags(self) -> tuple[str, ...]:
        return self.flag_columns()

    def paced_every(self) -> Any:
        return self.every

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        # a Python aggregate function raising on a key (etl.components.transforms.aggregate.build)
        return any(a.fn not in AGGREGATES for a in self.aggregates)

    @model_validator(mode="after")
    def _names(self) -> AggregateTransform:
        seen = {g.lower() for g in self.group_by} | {UPDATE, RETRACT}
        for a in self.aggregates:
            if a.as_.lower() in seen:
                raise ValueError(f"aggregate output '{a.as_}' repeats another output column of the aggregate")
            seen.add(a.as_.lower())
        return self
