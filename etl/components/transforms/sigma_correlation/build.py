"""sigma_correlation: Sigma correlation rules over the alerts of a Sigma filter, on event-time windows.

Each correlation rule of the input filter's Sigma files (resolved by etl.load.sigma_corr) is one streaming
aggregation on the native window engine (etl.compile.windows.native): the alert rows of its referenced rules,
grouped by its group-by columns (an alias: the column of each row's rule) in windows of its timespan
(tumbling, or `slides` sliding windows per timespan), append mode (a window's row leaves once the watermark
passes its end). The rows of all correlations are one union:

    rule, rule_id, rule_title, rule_level, rule_tags   the correlation rule (as detection alerts carry theirs)
    correlation_type, group (map: group-by name -> value as text), window_start, window_end,
    value (a double, see etl.load.sigma_corr), rules_seen (the referenced rules with alerts in the window, sorted)

and a row leaves only when `value <op> count` holds. The windows' rows (RAW) are what the query streams; the
condition and the metadata are applied to each micro-batch (`Built.tail`), so that a changed condition, title,
level or tags applies while the query runs (etl.compile.sigma_reload says which changes can).
"""

from __future__ import annotations

from functools import reduce
from types import SimpleNamespace
from typing import Any

from etl.compile.context import Built, CompileContext, CompileError
from etl.compile.counts import metric_name
from etl.components.transforms.filter.alerts import meta_map
from etl.compile.watermark import with_event_time
from etl.compile.windows.aggregate import window_aggregate
from etl.compile.windows.native import event_time_column
from etl.graph.model import Node
from etl.spec.sigma import CORRELATION_COLUMNS
from etl.components.transforms.window.spec import WindowTransform

# the rows the windows give (per correlation, group and window), before the condition and the metadata
RAW = ("rule", "correlation_type", "group", "window_start", "window_end", "value", "rules_seen")


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    spec = node.spec
    src = next(e.src for e in node.inputs if e.role == "input")
    from etl.compile.rule_programs import rule_set

    # the alerts of `generate: false` rules too, which the filter holds back (its output is what it emits)
    held = rule_set(ctx, ctx.graph.node(src)).silent
    every = ctx.caches.sigma_alerts.get(src) if held else None
    df = every if every is not None and inputs[0].isStreaming else inputs[0]
    if every is not None and df is every and ctx.physical_plan().target.component_counts:  # the filter's rows out: what it emits
        from pyspark.sql import functions as F

        df = df.observe(metric_name(src), F.count_if(~F.col("rule").isin(*sorted(held))).alias("rows"))
    et = spec.event_time or ctx.event_time(node)
    if et is None:
        raise CompileError(f"sigma_correlation '{node.id}' needs event time", node, code="E320",
                           hint="set `event_time: {field: ts, watermark: 30s}` on it or on its source")
    if spec.event_time is not None:
        df = with_event_time(df, node, spec.event_time)
    stats = ctx.graph.sigma.get(src)
    corrs = stats.correlations if stats is not None else []
    prepared, et_col = event_time_column(df, et.field, et.watermark)
    raw = reduce(lambda a, b: a.unionByName(b),
                 [_correlation(prepared, c, et_col, spec.slides, node) for c in corrs] or [_nothing(prepared)])
    from etl.compile.sigma_reload import correlation_set

    cs = correlation_set(ctx, node)

    def tail(batch: Any) -> Any:  # between micro-batches: pick up changed correlation rules (etl.compile.sigma_reload)
        cs.refresh()
        return _conditioned(batch, cs.current)

    return Built(out=_conditioned(raw, corrs), raw=raw, tail=tail)


def _conditioned(df: Any, corrs: list[Any]) -> Any:
    """The rows of `df` (RAW columns) whose correlation is in `corrs` and whose condition holds, with the
    correlation rule's metadata (CORRELATION_COLUMNS)."""
    from pyspark.sql import functions as F

    if not corrs:
        return df.where(F.lit(False)).select(*[F.lit(None).cast(t).alias(n) for n, t in CORRELATION_COLUMNS.items()])
    rule = F.col("rule")
    holds = reduce(lambda acc, c: acc.when(rule == c.rule, F.expr(c.condition("value"))), corrs[1:],
                   F.when(rule == corrs[0].rule, F.expr(corrs[0].condition("value"))))
    info = F.element_at(meta_map({c.rule: (c.sigma_id, c.title, c.level, c.tags) for c in corrs}), rule)
    return df.where(F.coalesce(holds, F.lit(False))).select(
        "rule", info["id"].alias("rule_id"), info["title"].alias("rule_title"), info["level"].alias("rule_level"),
        info["tags"].alias("rule_tags"), *RAW[1:])


def _window_spec(c: Any, slides: int, group: list[str], aggregates: list[dict], node: Node) -> Any:
    size_ms = c.seconds * 1000
    shape = ({"kind": "tumbling", "size": c.seconds} if slides == 1 else
             {"kind": "sliding", "size": c.seconds, "slide": (size_ms // slides) / 1000})
    return WindowTransform.model_validate({"id": node.id, "type": "window", "input": "x", **shape,
                                           "group_by": group, "aggregates": aggregates})


def _correlation(df: Any, c: Any, et: str, slides: int, node: Node) -> Any:
    from pyspark.sql import functions as F

    rule = F.col("rule")
    frame = df.where(rule.isin(*dict.fromkeys(c.rules)))
    group = []
    for i, (_label, mapping) in enumerate(c.group):
        cols = {col for _, col in mapping}
        if len(cols) == 1:
            value = F.col(_ref(next(iter(cols))))
        else:
            value = reduce(lambda acc, rc: acc.when(rule == rc[0], F.col(_ref(rc[1]))),
                           mapping[1:], F.when(rule == mapping[0][0], F.col(_ref(mapping[0][1]))))
        frame = frame.withColumn(f"_g{i}", value.cast("string"))
        group.append(f"_g{i}")
    aggregates = [{"fn": "collect_set", "field": "rule", "as": "_seen"}]
    if c.kind == "event_count":
        aggregates.append({"fn": "count", "as": "_value"})
    elif c.kind == "value_count":
        frame = frame.withColumn("_field", F.col(_ref(c.field)))
        aggregates.append({"fn": "count_distinct", "field": "_field", "as": "_value"})
    elif c.kind == "temporal":
        aggregates.append({"fn": "count_distinct", "field": "rule", "as": "_value"})
    elif c.kind in ("value_sum", "value_avg"):
        frame = frame.withColumn("_field", _number(F.col(_ref(c.field))))
        aggregates.append({"fn": c.kind[len("value_"):], "field": "_field", "as": "_value"})
    elif c.kind in ("value_percentile", "value_median"):  # every number of the window: exact percentile
        frame = frame.withColumn("_field", _number(F.col(_ref(c.field))))
        aggregates.append({"fn": "collect_list", "field": "_field", "as": "_values"})
    else:  # temporal_ordered: the event times of each referenced rule
        for j, rid in enumerate(dict.fromkeys(c.rules)):
            frame = frame.withColumn(f"_t{j}", F.when(rule == rid, F.col(f"`{et}`")))
            aggregates.append({"fn": "collect_set", "field": f"_t{j}", "as": f"_t{j}"})
    at = SimpleNamespace(field=et, watermark=None)  # `et` is already the watermarked event-time column
    res = window_aggregate(frame, _window_spec(c, slides, group, aggregates, node), at, engine="native")
    value = (_in_order(c) if c.kind == "temporal_ordered" else
             _percentile(F.col("_values"), c.percentile) if c.kind in ("value_percentile", "value_median")
             else F.col("_value"))
    labels = [x for i, (label, _m) in enumerate(c.group) for x in (F.lit(label), F.col(f"_g{i}"))]
    return res.df.select(
        F.lit(c.rule).alias("rule"), F.lit(c.kind).alias("correlation_type"),
        F.create_map(*labels).cast("map<string,string>").alias("group"),
        "window_start", "window_end", value.cast("double").alias("value"),
        F.col("_seen").cast("array<string>").alias("rules_seen"))


def _in_order(c: Any) -> Any:
    """How many rules of the list, from the first, match at strictly increasing event times: each rule's
    earliest time after the previous one's (greedy, which finds the longest such prefix)."""
    from pyspark.sql import functions as F

    index = {rid: j for j, rid in enumerate(dict.fromkeys(c.rules))}
    prev = None
    found = []
    for rid in c.rules:
        times = F.col(f"_t{index[rid]}")
        at = F.array_min(times) if prev is None else F.array_min(F.filter(times, _after(prev)))
        found.append(at)
        prev = at
    return reduce(lambda a, b: a + b, [F.when(t.isNotNull(), 1).otherwise(0) for t in found])


def _number(col: Any) -> Any:
    """A field read as a number: numbers as they are, text that is a number as that number, else NULL."""
    return col.try_cast("double")


def _percentile(values: Any, p: int | None) -> Any:
    """The p-th percentile of the non-null numbers of `values`, exactly: linear interpolation between the closest
    ranks (numpy's default, Spark's `percentile`); NULL when there is none."""
    from pyspark.sql import functions as F

    s = F.array_sort(F.filter(values, lambda x: x.isNotNull()))
    n = F.size(s)
    pos = (n - 1) * F.lit(p if p is not None else 50) / 100  # as the oracle computes it, to the last bit
    lo = F.floor(pos).cast("int")
    hi = F.ceil(pos).cast("int")
    a, b = F.element_at(s, lo + 1), F.element_at(s, hi + 1)
    return F.when(n > 0, a + (pos - lo) * (b - a))


def _after(t: Any) -> Any:
    return lambda x: x > t


def _nothing(df: Any) -> Any:
    """No correlation rule: a stream that never has a row, with the RAW columns."""
    from pyspark.sql import functions as F

    return df.where(F.lit(False)).select(*[F.lit(None).cast(CORRELATION_COLUMNS[n]).alias(n) for n in RAW])


def _ref(name: str) -> str:
    """A column name as F.col reads it: a nested path a.b stays a path, anything else is quoted."""
    return name if "." in name and "`" not in name else f"`{name}`"
