"""The JVM rule path: a filter's rule set decided by static calls in generated code, with no Python worker.

Spark runs a Python UDF through a worker per task, and that round trip costs
even when the JVM prefilter leaves it no row (bench/filter.py --rules 1000:
0.12 s of a 0.9 s run). So a program whose predicates are all patterns on one
string field that translate exactly to java.util.regex (etl.optimize.jvmprogram
says which, and why not) runs in etl/jvm/RuleMatch.java instead: the prefilter
first, then `RuleMatch.any` (keep, drop) or `RuleMatch.ids` (tag) on the rows
it lets through. The program goes to the executors as a file (SparkContext.
addFile), named by its content: a reloaded rule set gets a new one.

Whether a rule set takes this path is the physical planner's choice
(etl.physical.engines, engine `rules-jvm`: `ETL_RULES_JVM=off`, a session
without etl's jar, a program jvmprogram rejects, and rule sets one of whose
patterns ran past its step budget stay on the Python path): java.util.regex
backtracks (`x\\w*\\w*\\w*\\w*\\w*y` on 300 word characters takes minutes), so
RuleMatch.java stops such a run; the runner then calls its `Demotions.demote`
(the run's, on its CompileContext), which adds the program to the run's demoted
rule sets (the planner's Target.demoted: compile asks the planner again, which
now picks the Python path) and runs the micro-batch again, with Hyperscan,
which never backtracks. Sibling filters (several filters reading one input)
that take the JVM path each run alone; the others still share one mapInArrow
pass.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from etl.compile.jvm import ship_text, static_call
from etl.physical.engines import jvm_rule_plan

log = logging.getLogger("etl.rules")

CLASS = "etl.jvm.RuleMatch"  # etl/jvm/RuleMatch.java
# RuleMatch.Exhausted's message (RuleMatch.BUDGET_MARK, the program file in brackets, what happened)
BUDGET = re.compile(r"etl-rule-budget\[([\w.-]+)\] pattern (\d+) ([^\n]*)")


def _key(program: Any) -> str:
    return getattr(program, "digest", "") or f"id:{id(program)}"


def budget_exceeded(exc: BaseException) -> tuple[str, int, str] | None:
    """(program file, pattern index, what happened) when `exc` (a failed Spark job, as Python sees it) is a rule
    pattern stopped by its step budget; else None."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        m = BUDGET.search(str(e))
        if m:
            return m.group(1), int(m.group(2)), m.group(3)
        e = e.__cause__ or e.__context__
    return None


@dataclass
class Demotions:
    """A run's rule sets that ran past a step budget (the planner's Target.demoted from then on), and the program
    files its JVM rule paths shipped, by which a budget failure names its rule set. One per CompileContext (the
    run's): a rule set moved to the Python path stays there for the rest of the run."""

    programs: set[str] = field(default_factory=set)  # the moved programs' keys (digests)
    files: dict[str, tuple[str, Any]] = field(default_factory=dict)  # program file -> (its program's key, JvmPlan)

    def shipped(self, file: str, program: Any, plan: Any) -> None:
        """A program file a verdict column reads (its demote finds the pattern by the file)."""
        self.files[file] = (_key(program), plan)

    def demoted(self, program: Any) -> bool:
        """Has one of the program's patterns run past its step budget in this run?"""
        return _key(program) in self.programs

    def frozen(self) -> frozenset[str]:
        """The moved programs, as the planner's Target.demoted takes them."""
        return frozenset(self.programs)

    def demote(self, exc: BaseException) -> bool:
        """Move the rule set a budget failure names to the Python path; False when `exc` is no such failure (or
        names a rule set already moved: then it must not be retried)."""
        got = budget_exceeded(exc)
        if got is None or got[0] not in self.files:
            return False
        key, plan = self.files[got[0]]
        if key in self.programs:
            return False
        self.programs.add(key)
        regex = plan.regexes[got[1]] if 0 <= got[1] < len(plan.regexes) else "?"
        log.warning("rule set %s leaves the JVM for the Python path (Hyperscan): pattern %r %s", key[:12], regex,
                    got[2])
        return True


def plan_of(program: Any) -> Any:
    """The program's JvmPlan (etl.optimize.jvmprogram), once per digest (etl.physical.engines)."""
    return jvm_rule_plan(program)


def verdict(program: Any, df: Any, tag: bool, candidate: Any, demotions: Demotions | None = None) -> Any:
    """The program's result per row as a JVM column (boolean "some rule matches", or the matched rule ids), or
    None when the frame's field is not a string column (the planner picked this engine; the data's type is
    checked here). ``candidate``: the prefilter's condition (rows failing it match no rule), or None;
    ``demotions``: the run's, where the shipped program file is recorded (None: a caller that cannot demote)."""
    spark = df.sparkSession
    plan = plan_of(program)
    if plan.body is None:
        return None
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BooleanType, StringType

    if plan.field is None:
        value = F.lit(None).cast("string")
    else:
        try:
            dtype = df.select(F.col(plan.field)).schema.fields[0].dataType
        except Exception:  # noqa: BLE001 - a field the frame does not have: the Python matcher reads it as null
            return None
        if not isinstance(dtype, StringType):
            return None
        value = F.col(plan.field)
    file = ship_text(spark, "rules", plan.body)
    if demotions is not None:
        demotions.shipped(file, program, plan)
    name = F.lit(file)
    if tag:
        ids = static_call(spark, CLASS, "ids", ArrayType(StringType()), value, name, null_in_null_out=False)
        return ids if candidate is None else F.when(candidate, ids).otherwise(F.array().cast("array<string>"))
    hit = static_call(spark, CLASS, "any", BooleanType(), value, name, null_in_null_out=False)
    return hit if candidate is None else F.when(candidate, hit).otherwise(F.lit(False))
