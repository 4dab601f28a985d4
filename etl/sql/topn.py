"""Flink's TopN -> a `top_n` transform (etl.components.transforms.top_n.spec).

    SELECT ... FROM (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, k ORDER BY cnt DESC) AS rownum
      FROM <a windowed GROUP BY, or a view of one>
    ) WHERE rownum <= N

A PARTITION BY holding the window's start or end column (Rel.window: its name after the selects in
between) ranks each window's final rows; `rownum = 1` there is Flink's window deduplication (Top 1).
Without a window column it is a continuously updated TopN (`continuous: true`, over the rows as they
arrive; no PARTITION BY: one global ranking), whose rows are updates keyed by the PARTITION BY
columns and the rank: its `_update` flag is hidden as the continuous aggregate's (Rel.flags). The
rank column keeps the ROW_NUMBER alias. `rn = 1` ordered by the time attribute is a dedupe
(etl.sql.dedup).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl.sql.relation import Rel, pos
from etl.sql.script import SqlSyntax


def compile_top_n(qc: Any, rel: Rel, keys: list, orders: list, n: int, rn: str, item: exp.Expression,
                  base: str, continuous: bool = False) -> Rel:
    b = qc.b
    if not orders:
        raise SqlSyntax("TopN needs ORDER BY in ROW_NUMBER() OVER (...)", pos(b, item),
                        f"ROW_NUMBER() OVER (PARTITION BY {'k' if continuous else 'window_start'} ORDER BY cnt DESC)",
                        "E011")
    order_by = []
    for o in orders:
        if not isinstance(o.this, exp.Column):
            raise SqlSyntax("TopN orders by columns: compute the expression in the query it ranks", pos(b, o),
                            code="E011")
        order_by.append(o.this.name + (" DESC" if o.args.get("desc") else ""))
    tid = b.new_id(f"{base}_top_n")
    spec: dict[str, Any] = {"id": tid, "type": "top_n", "inputs": [rel.id]}
    if keys:
        spec["partition_by"] = [k.name for k in keys]
    spec.update({"order_by": order_by, "n": n, "rank": rn})
    if continuous:
        spec["continuous"] = True
    b.add_transform(spec, pos(b, item))
    cols = None if rel.cols is None else [*[c for c in rel.cols if c != rn], rn]
    if not continuous:
        return replace(rel, id=tid, cols=cols, table=None, static=False)
    return replace(rel, id=tid, cols=cols, table=None, static=False, flags=("_update",), event_time=None,
                   proctime=None, wm=None, window=())
