"""The JVM rule path for rule sets over several string fields (Sigma rule sets): no Python worker.

etl.compile.rules_jvm runs rule sets whose predicates are patterns on one field.
A rule set reading several fields, with string comparisons (equals, starts and
ends with, contains, caseless or not), null tests and patterns, whose program
file etl.optimize.jvmmulti writes, runs here instead: its fields go as one
struct of strings to `RuleMatch.anyRow` / `RuleMatch.idsRow` (static calls in
generated code), which find each field's needles and literals through 3-grams
and decide the rules. The physical planner chooses this path (etl.physical.engines,
`rules-jvm-multi`); `unfit` checks the session and the frame's column types again;
a pattern past its step budget (or overflowing the stack) moves the rule set
to the Python path as in rules_jvm (the run's `Demotions.demote`, which knows the file).
"""

from __future__ import annotations

import logging
from typing import Any

import etl.compile.jvm as jvm
from etl.compile import rules_jvm
from etl.optimize.jvmmulti import multi_plan
from etl.spec.sigma import DETAIL_TYPE
from etl.workercache import WorkerCache

log = logging.getLogger("etl.rules")

_PLANS: WorkerCache[str, Any] = WorkerCache("MultiPlans by program digest", 16)  # a pure function of the digest


def plan_of(program: Any) -> Any:
    """The program's MultiPlan, made once per program digest (the last 16 kept)."""
    key = getattr(program, "digest", "")
    if key in _PLANS:
        return _PLANS[key]
    got = multi_plan(program)
    if got.body is None:
        log.info("rule set %s is not decided in the JVM: %s", key[:12], got.reason)
    if key:
        _PLANS[key] = got
    return got


def unfit(spark: Any, program: Any, df: Any = None, demotions: rules_jvm.Demotions | None = None) -> str | None:
    """Why this session cannot run the program on this path (None: it can). With `df`, its fields' types too;
    with `demotions` (the run's), whether a step budget moved the rule set to the Python path."""
    if not jvm.available(spark):
        return "etl's jar is not in this session"
    if demotions is not None and demotions.demoted(program):
        return "a pattern ran past its step budget: the rule set moved to the Python path"
    plan = plan_of(program)
    if plan.body is None:
        return plan.reason
    if df is not None:
        from pyspark.sql.types import StringType

        for f in plan.fields:
            col = _column(df, f)
            if col is not None and not isinstance(df.select(col).schema.fields[0].dataType, StringType):
                return f"field {f} is not a string column"
    return None


def _column(df: Any, field: str) -> Any:
    """The frame's column for a field (a top-level name, else a nested path), or None when it has none (the
    field is then null, as the reference interpreter reads a missing field)."""
    from pyspark.sql import functions as F

    col = F.col(f"`{field}`") if field in df.columns else F.col(field)
    try:
        df.select(col).schema  # noqa: B018 - analyses the column (AnalysisException: no such field)
    except Exception:  # noqa: BLE001 - AnalysisException: no such field
        return None
    return col


def verdict(program: Any, df: Any, tag: bool, candidate: Any, details: Any = None,
            demotions: rules_jvm.Demotions | None = None) -> Any:
    """As rules_jvm.verdict, for programs over several fields: the result column, or None. With `details` (tag
    mode; filter_alerts.details_array of the program's rules) the tag column holds the matched rules' structs
    (etl.spec.sigma.DETAIL_TYPE) instead of their ids."""
    spark = df.sparkSession
    if unfit(spark, program, df, demotions) is not None:
        return None
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BooleanType, StringType

    plan = plan_of(program)
    cols = [_column(df, f) for f in plan.fields]
    values = F.struct(*[(F.lit(None).cast("string") if c is None else c).alias(f"f{i}") for i, c in enumerate(cols)])
    file = jvm.ship_text(spark, "rules", plan.body)
    if demotions is not None:
        demotions.shipped(file, program, plan)  # its demote finds the pattern by the file
    name = F.lit(file)
    if tag:
        if details is not None:
            from pyspark.sql.types import DataType

            dtype = DataType.fromDDL(DETAIL_TYPE)
            got = jvm.static_call(spark, rules_jvm.CLASS, "detailsRow", dtype, values, name, details,
                                  null_in_null_out=False)
            return got if candidate is None else F.when(candidate, got).otherwise(F.array().cast(DETAIL_TYPE))
        ids = jvm.static_call(spark, rules_jvm.CLASS, "idsRow", ArrayType(StringType()), values, name,
                              null_in_null_out=False)
        return ids if candidate is None else F.when(candidate, ids).otherwise(F.array().cast("array<string>"))
    hit = jvm.static_call(spark, rules_jvm.CLASS, "anyRow", BooleanType(), values, name, null_in_null_out=False)
    return hit if candidate is None else F.when(candidate, hit).otherwise(F.lit(False))
