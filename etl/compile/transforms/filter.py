"""filter: a Spark SQL condition (`expr`) and/or a rule set (`rules`, `rule_files`).

Two independent halves meet in `build`:

* `apply_expr`: the condition runs in the JVM (`keep` keeps rows where it is
  true, `drop` drops them; NULL counts as false);
* `apply_rules`: the rule set runs through the filter optimizer's program
  (etl.optimize): compiled and serialized once on the driver, loaded once per
  Python worker, applied with `mapInArrow`. The optimizer owns the program;
  this module only needs its small protocol:

      etl.optimize.compile_rules.compile_rules(spec, base_dir) -> program
          (used when the plan step carries no program yet)
      etl.optimize.matcher.dumps(program) -> bytes          # driver
      etl.optimize.matcher.loads(bytes)   -> matcher        # each worker, once
      matcher.apply(record_batch, mode, tag_field) -> record_batch
          keep/drop: the rows to keep; tag: every row plus `tag_field`
          (array<string> of matched rule ids)

When etl.optimize is not there yet, a filter with rules fails to compile
with a clear message; filters with `expr` only always work.
"""

from __future__ import annotations

import importlib
from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.compile.transforms.columns import _expr
from etl.graph.model import Node

_MATCHERS: dict[int, Any] = {}  # per Python worker: hash(blob) -> loaded matcher


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    spec = node.spec
    df = inputs[0]
    if spec.rules or spec.rule_files:
        df = apply_rules(ctx, node, df)
    if spec.expr is not None:
        df = apply_expr(node, df, spec.expr, "drop" if spec.mode == "drop" else "keep")
    return df


def apply_expr(node: Node, df: Any, sql: str, mode: str) -> Any:
    from pyspark.sql import functions as F

    cond = F.coalesce(_expr(node, sql, "expr"), F.lit(False))
    return df.where(~cond if mode == "drop" else cond)


def _optimizer() -> tuple[Any, Any]:
    try:
        compile_rules = importlib.import_module("etl.optimize.compile_rules")
        matcher = importlib.import_module("etl.optimize.matcher")
    except ImportError:
        return None, None
    return compile_rules, matcher


def rules_program(ctx: CompileContext, node: Node) -> bytes:
    """Compile (or take from the plan) and serialize the rule program: once, on the driver."""
    compile_rules, matcher = _optimizer()
    if compile_rules is None:
        raise CompileError(f"filter '{node.id}' uses rules, but the filter optimizer (etl.optimize.compile_rules, "
                           "etl.optimize.matcher) is not available in this build", node, "rules", code="E403",
                           hint="use `expr` for now, or update etl")
    plan = ctx.options.get("plan")
    program = None
    if plan is not None:
        try:
            program = plan.step(node.id).program
        except StopIteration:
            program = None
    try:
        if program is None:
            program = compile_rules.compile_rules(node.spec, base_dir=ctx.graph.base_dir)
        return matcher.dumps(program)
    except AttributeError as e:
        raise CompileError(f"filter '{node.id}': the filter optimizer does not offer what the runtime needs ({e})",
                           node, "rules", code="E403") from None


def apply_rules(ctx: CompileContext, node: Node, df: Any) -> Any:
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType

    spec = node.spec
    cache_key = ("rules_blob", node.id)
    blob = ctx.options.get(cache_key)
    if blob is None:
        blob = ctx.options[cache_key] = rules_program(ctx, node)
    schema = df.schema
    if spec.mode == "tag":
        schema = StructType([f for f in schema.fields if f.name != spec.tag_field]
                            + [StructField(spec.tag_field, ArrayType(StringType()), True)])
    mode, tag_field, key = spec.mode, spec.tag_field, hash(blob)

    def run(batches: Any) -> Any:
        m = _MATCHERS.get(key)
        if m is None:
            m = _MATCHERS[key] = importlib.import_module("etl.optimize.matcher").loads(blob)
        for rb in batches:
            yield m.apply(rb, mode, tag_field)

    return df.mapInArrow(run, schema)
