"""Rule metadata on a filter's output: tag details (structs in the tag column) and alerts mode.

The matcher (Python or JVM path) gives the ids of the matched rules per row;
the metadata of each rule (etl id, Sigma id, title, level, tags) is a literal
map in the query, so turning ids into metadata stays in the JVM:

* tag mode with details: the tag column becomes
  ``array<struct<rule, id, title, level, tags>>`` (same order as the ids);
* alerts mode: one row per (event, matched rule), the event's columns plus
  ``rule``, ``rule_id``, ``rule_title``, ``rule_level``, ``rule_tags``; events
  matching no rule give no row. `route` can then send e.g.
  ``rule_level = 'critical'`` elsewhere.

Rules that only Sigma correlation rules with `generate: false` (Sigma's default)
reference are correlation input only (`silent`): their ids leave the tag
column, their alert rows the filter's output; a `sigma_correlation` reading the
filter gets every alert (the streaming frame before that step,
`Caches.sigma_alerts`).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from etl.spec.sigma import ALERT_COLUMNS, DETAIL_TYPE


def rule_meta(sourced: Iterable[Any]) -> dict[str, tuple]:
    """etl rule id -> (Sigma id or etl id, title, level, tags) of a filter's sourced rules."""
    out: dict[str, tuple] = {}
    for sr in sourced:
        r = getattr(sr, "rule", sr)  # a sourced rule, or an inline spec rule
        entry = getattr(sr, "sigma", None)
        if entry is not None:
            out[r.id] = (entry.sigma_id or r.id, entry.title or None, entry.level, tuple(entry.tags))
        else:
            out[r.id] = (r.id, r.description, r.severity, tuple(r.tags))
    return out


def without(df: Any, column: str, rules: frozenset[str]) -> Any:
    """The tag column of ids less `rules`."""
    from pyspark.sql import functions as F

    drop = sorted(rules)
    return df.withColumn(column, F.filter(F.col(f"`{column}`"), lambda r: ~r.isin(*drop)))


def emitted(alert_rows: Any, rules: frozenset[str]) -> Any:
    """Alert rows (`alerts`) less those of `rules`."""
    from pyspark.sql import functions as F

    return alert_rows.where(~F.col("rule").isin(*sorted(rules)))


def _sql_string(v: Any) -> str:
    if v is None:
        return "CAST(NULL AS STRING)"
    return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _struct_sql(rid: str, entry: tuple) -> str:
    ident, title, level, tags = entry
    tag_list = f"array({', '.join(_sql_string(t) for t in tags)})" if tags else "CAST(array() AS ARRAY<STRING>)"
    return (f"named_struct('rule', {_sql_string(rid)}, 'id', {_sql_string(ident)}, 'title', {_sql_string(title)}, "
            f"'level', {_sql_string(level)}, 'tags', {tag_list})")


def meta_map(meta: dict[str, tuple]) -> Any:
    """The metadata as one map literal, written as one SQL expression (one call into the JVM, however many
    rules: building it column by column cost seconds per micro-batch at a thousand rules)."""
    from pyspark.sql import functions as F

    if not meta:
        return None
    return F.expr("map(" + ", ".join(f"{_sql_string(rid)}, {_struct_sql(rid, e)}" for rid, e in meta.items()) + ")")


def details_array(meta: dict[str, tuple], rule_ids: list[str]) -> Any:
    """The metadata of the rules `rule_ids` (a program's, in its order) as one array literal of tag details
    structs, for the JVM rule path to pick matched rules' structs by index (etl.jvm.RuleMatch.detailsRow: no map
    lookup per id in a higher-order function, which Spark evaluates outside generated code); None when a rule
    has no metadata."""
    from pyspark.sql import functions as F

    if not rule_ids or any(r not in meta for r in rule_ids):
        return None
    return F.expr("array(" + ", ".join(_struct_sql(r, meta[r]) for r in rule_ids) + ")")


def with_details(df: Any, column: str, m: Any) -> Any:
    """The tag column's ids replaced by the rules' metadata structs (`m`: meta_map of the rules)."""
    from pyspark.sql import functions as F

    if m is None:
        return df.withColumn(column, F.array().cast(DETAIL_TYPE))
    return df.withColumn(column, F.transform(F.col(f"`{column}`"), lambda r: F.element_at(m, r)))


def alerts(df: Any, column: str, m: Any) -> Any:
    """One row per (row, id in `column`), with the rule's metadata columns (`m`: meta_map); `column` is dropped."""
    from pyspark.sql import functions as F

    hit = "_etl_alert_rule"
    exploded = df.withColumn(hit, F.explode(F.col(f"`{column}`"))).drop(column)
    info = F.element_at(m, F.col(hit)) if m is not None else None
    cols = {"rule": F.col(hit)}
    for name, key in (("rule_id", "id"), ("rule_title", "title"), ("rule_level", "level"), ("rule_tags", "tags")):
        cols[name] = info[key] if info is not None else F.lit(None).cast(ALERT_COLUMNS[name])
    return exploded.withColumns(cols).drop(hit)
