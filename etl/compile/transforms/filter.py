"""filter: a Spark SQL condition (`expr`) and/or a rule set (`rules`, `rule_files`).

Two independent halves meet in `build` (rules first, then `expr`):

* `apply_expr`: the condition runs in the JVM (`keep` keeps rows where it is
  true, `drop` drops them; NULL counts as false);
* `apply_rules`: the rule set runs through the filter optimizer (etl.optimize):
  the plan step's FilterProgram (compiled by `check_file(..., programs=True)`,
  or here from the graph's rules) is pickled once on the driver, loaded once
  per Python worker into a `Matcher`, and applied with `mapInArrow`:
  `apply_mode(batch, matcher.match(batch), mode, tag_field)`.
  `rules_program` and `apply_rules` are the only places that know the optimizer.

When etl.optimize is not importable, a filter with rules fails to compile with
a clear message; filters with `expr` only always work.
"""

from __future__ import annotations

import pickle
from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.compile.transforms.columns import _expr
from etl.graph.model import Node

_MATCHERS: dict[int, Any] = {}  # per Python worker: hash(program blob) -> Matcher


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


def rules_program(ctx: CompileContext, node: Node) -> bytes:
    """The serialized FilterProgram of this filter: compiled (or taken from the plan) once, on the driver."""
    try:
        from etl.optimize import RuleCompileError, compile_rules
        from etl.optimize import matcher as _matcher  # noqa: F401  (the workers need it)
    except ImportError as e:
        raise CompileError(f"filter '{node.id}' uses rules, but the filter optimizer (etl.optimize.compile_rules, "
                           f"etl.optimize.matcher) cannot be imported: {e}", node, "rules", code="E403",
                           hint="use `expr` for now, or install etl with its optimizer dependencies") from None
    program = None
    plan = ctx.options.get("plan")
    if plan is not None:
        step = next((s for s in plan.steps if s.node_id == node.id), None)
        program = getattr(step, "program", None)
    if program is None:
        loaded = (getattr(ctx.graph, "rules", None) or {}).get(node.id)
        if loaded is None and node.spec.rule_files:
            raise CompileError(f"filter '{node.id}': its rule files were not loaded", node, "rule_files",
                               code="E403", hint="check the pipeline with check_file(..., programs=True)")
        rules = [r.rule for r in loaded] if loaded is not None else list(node.spec.rules or [])
        try:
            program = compile_rules(rules)
        except RuleCompileError as e:
            raise CompileError(f"filter '{node.id}': rule cannot be compiled: {e}", node, "rules",
                               code="E300") from None
    return pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL)


def _matcher(key: int, blob: bytes) -> Any:
    m = _MATCHERS.get(key)
    if m is None:
        from etl.optimize.matcher import Matcher

        m = _MATCHERS[key] = Matcher(pickle.loads(blob))
    return m


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
        from etl.optimize.matcher import apply_mode

        m = _matcher(key, blob)
        for rb in batches:
            if mode == "tag" and tag_field in rb.schema.names:
                rb = rb.drop_columns([tag_field])
            yield apply_mode(rb, m.match(rb), mode, tag_field)

    return df.mapInArrow(run, schema)
