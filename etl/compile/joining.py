"""Stream-stream joins: inner, left, right or full outer, on equal keys, within a time bound.

`stream_join(left, right, spec, left_time, right_time)` joins two streaming
DataFrames the way Spark can keep bounded state for:

* both sides carry a watermarked event-time column (the source's, or
  `left_time` / `right_time` of the join);
* the condition is `left.k = right.k AND right.t BETWEEN left.t + lower AND
  left.t + upper` (`within`: one duration d is [-d, +d]; `[-5m, +1m]` is
  asymmetric), and `condition` (any Spark SQL, over the output columns) when
  given, so a row leaves the state once the watermark passes its time + the
  bound (+ the other side's allowed lateness);
* outer joins: a row of the outer side(s) without a match is emitted with NULL
  columns of the other side once the watermark guarantees no match can arrive
  any more -- not before. A row that matched is never emitted unmatched.
* semi: each left row with a match, once (Spark's left semi join, when the first match arrives); anti:
  the left rows a left outer join pads (no match within the bound), once the watermark has passed it;
  both write the left columns only.

Output columns: the key columns, the other left columns, the other right
columns; a right column whose name the left already uses (case-insensitively) is renamed
`<right_prefix><name>` (the compile step passes `<right input id>_`). In right
and full joins a key column holds the right row's key when the left side is
missing (`coalesce(left.k, right.k)`).
Rows a side receives behind its watermark are dropped by Spark (late), as
for every stateful operator. Output mode: append. Duplicates are joined as
they come: put a `dedupe` (dropDuplicatesWithinWatermark) before the join to
drop them within the watermark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from etl.compile.windows.native import WindowError, event_time_column

LT, RT = "_etl_lt", "_etl_rt"


class JoinError(WindowError):
    """A join that cannot be compiled."""


@dataclass
class JoinResult:
    df: Any
    output_mode: str = "append"
    renamed: dict[str, str] | None = None  # right column -> output name


def stream_join(left: Any, right: Any, spec: Any, left_time: Any, right_time: Any, *,
                right_prefix: str = "right_") -> JoinResult:
    """Join per `spec` (a JoinTransform: on, how, within)."""
    from pyspark.sql import functions as F

    for side, df in (("left", left), ("right", right)):
        missing = [k for k in spec.on if k not in df.columns]
        if missing:
            raise JoinError(f"join key(s) {', '.join(missing)} missing on the {side} input; columns: "
                            f"{', '.join(df.columns)}", "on")
    if left_time is None or right_time is None:
        side = "left" if left_time is None else "right"
        raise JoinError(f"a stream-stream join needs event time on both inputs: set `{side}_time: "
                        "{field: ts, watermark: 30s}` or `event_time` on the source", f"{side}_time")
    lt_type = dict(left.dtypes).get(left_time.field)
    rt_type = dict(right.dtypes).get(right_time.field)
    if lt_type is None or rt_type is None:
        side, f = ("left", left_time.field) if lt_type is None else ("right", right_time.field)
        raise JoinError(f"event time column '{f}' does not exist on the {side} input", f"{side}_time")
    lp, lt = event_time_column(left, left_time.field, left_time.watermark, name=LT)
    rp, rt = event_time_column(right, right_time.field, right_time.watermark, name=RT)
    if rt in spec.on:
        raise JoinError(f"the right event time column '{rt}' cannot also be a join key", "right_time")

    left_cols = [c for c in left.columns]
    right_cols = [c for c in right.columns if c not in spec.on]
    taken = {c.lower() for c in left_cols}  # as Spark resolves names: case-insensitively (Host and host clash)
    renamed = {c: (right_prefix + c if c.lower() in taken else c) for c in right_cols}
    clash = [n for n in renamed.values() if n.lower() in taken or n == LT]
    if clash:
        raise JoinError(f"right column(s) {', '.join(clash)} still clash after renaming", "inputs")

    # every column once (a second copy of a watermarked column is a second event-time column)
    r_time = renamed.get(rt, rt)
    extra = [] if rt in renamed else [F.col(f"`{rt}`")]
    lk = lp.alias("l")
    rk = rp.select(*[F.col(f"`{k}`").alias(f"_etl_k{i}") for i, k in enumerate(spec.on)],
                   *[F.col(f"`{c}`").alias(renamed[c]) for c in right_cols], *extra).alias("r")
    cond = [F.col(f"l.`{k}`") == F.col(f"r._etl_k{i}") for i, k in enumerate(spec.on)]
    lower, upper = spec.within.lower, spec.within.upper
    cond.append(F.col(f"r.`{r_time}`").between(F.col(f"l.`{lt}`") + F.expr(f"INTERVAL {_interval(lower)}"),
                                               F.col(f"l.`{lt}`") + F.expr(f"INTERVAL {_interval(upper)}")))
    if getattr(spec, "condition", None):
        cond.append(F.expr(spec.condition))
    how = {"inner": "inner", "left": "left_outer", "right": "right_outer", "full": "full_outer",
           "semi": "left_semi", "anti": "left_outer"}[spec.how]
    joined = lk.join(rk, on=_and(cond), how=how)
    if spec.how in ("semi", "anti"):  # anti: the left rows the outer join pads (no right row matched them)
        rows = joined.where(F.col(f"r.`{r_time}`").isNull()) if spec.how == "anti" else joined
        return JoinResult(rows.select(*[F.col(f"l.`{c}`").alias(c) for c in left_cols]), "append", renamed)
    keys_from_right = spec.how in ("right", "full")
    out = joined.select(*[(F.coalesce(F.col(f"l.`{c}`"), F.col(f"r._etl_k{spec.on.index(c)}"))
                           if keys_from_right and c in spec.on else F.col(f"l.`{c}`")).alias(c) for c in left_cols],
                        *[F.col(f"r.`{renamed[c]}`").alias(renamed[c]) for c in right_cols])
    return JoinResult(out, "append", renamed)


def _and(conds: list[Any]) -> Any:
    out = conds[0]
    for c in conds[1:]:
        out = out & c
    return out


def _interval(seconds: float) -> str:
    """Spark interval text of a signed number of seconds ('-300 SECONDS')."""
    ms = int(round(float(seconds) * 1000))
    return f"{ms // 1000} SECONDS" if ms % 1000 == 0 else f"{ms} MILLISECONDS"
