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
"""

from __future__ import annotations

from typing import Any, Iterable

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


def _meta_map(meta: dict[str, tuple]) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    def struct(rid: str, m: tuple) -> Any:
        return F.struct(F.lit(rid).alias("rule"), F.lit(m[0]).cast("string").alias("id"),
                        F.lit(m[1]).cast("string").alias("title"), F.lit(m[2]).cast("string").alias("level"),
                        F.array(*[F.lit(t) for t in m[3]]).cast(ArrayType(StringType())).alias("tags"))

    args: list = []
    for rid, m in meta.items():
        args += [F.lit(rid), struct(rid, m)]
    return F.create_map(*args) if args else None


def with_details(df: Any, column: str, meta: dict[str, tuple]) -> Any:
    """The tag column's ids replaced by the rules' metadata structs."""
    from pyspark.sql import functions as F

    m = _meta_map(meta)
    if m is None:
        return df.withColumn(column, F.array().cast(DETAIL_TYPE))
    return df.withColumn(column, F.transform(F.col(f"`{column}`"), lambda r: F.element_at(m, r)))


def alerts(df: Any, column: str, meta: dict[str, tuple]) -> Any:
    """One row per (row, id in `column`), with the rule's metadata columns; `column` is dropped."""
    from pyspark.sql import functions as F

    hit = "_etl_alert_rule"
    exploded = df.withColumn(hit, F.explode(F.col(f"`{column}`"))).drop(column)
    m = _meta_map(meta)
    info = F.element_at(m, F.col(hit)) if m is not None else None
    cols = {"rule": F.col(hit)}
    for name, key in (("rule_id", "id"), ("rule_title", "title"), ("rule_level", "level"), ("rule_tags", "tags")):
        cols[name] = info[key] if info is not None else F.lit(None).cast(ALERT_COLUMNS[name])
    return exploded.withColumns(cols).drop(hit)
