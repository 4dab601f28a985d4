"""The `top_n` transform: the first n rows per partition, by an order (Flink's TopN).

Per window (the default): a window writes all final rows of one window in the same micro-batch
(they close together when the watermark passes the window's end), so ranking them needs no state:
`top_n` runs on each micro-batch of its window's query (etl.components.transforms.top_n.build), partitioned
by `partition_by` (the window's start or end column, and any keys) and ordered by `order_by`; it
keeps rows ranked 1..n and writes the rank into `rank` when given. It reads a window with final
rows only (no `emit.early` or `late: update`: their rows of one window come in several batches),
through filters, derives and selects.

`continuous: true` (Flink's TopN without a window): per `partition_by` key (none: one global
ranking) the state store keeps the key's current first n rows, for ever; after each micro-batch,
for each key the batch changed, the rows whose rank changed go out (etl.components.transforms.top_n.state):
updates keyed by `partition_by` and `rank` (required), flagged `_update` when a row replaces the
one that held its rank (the replaced row left that rank: moved down, or out of the first n). It
reads rows as they arrive, not updates of keys (E104).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from etl.registry import component
from etl.spec.base import Identifier, TransformBase
from etl.spec.continuous import UPDATE, updating_input

_ORDER = re.compile(r"\s*`?([A-Za-z_][A-Za-z0-9_]*)`?(?:\s+(ASC|DESC))?\s*", re.IGNORECASE)
_AS = re.compile(r"\s*`?([A-Za-z_][A-Za-z0-9_]*)`?(?:\s+AS\s+`?([A-Za-z_][A-Za-z0-9_]*)`?)?\s*", re.IGNORECASE)
ROW_BY_ROW = ("filter", "derive", "select")


def order_terms(order_by: list[str]) -> list[tuple[str, bool]]:
    """(column, descending) of each `order_by` entry ("amount DESC", "k")."""
    out = []
    for o in order_by:
        m = _ORDER.fullmatch(o)
        if m is not None:
            out.append((m.group(1), (m.group(2) or "").upper() == "DESC"))
    return out


def _window_names(graph: Any, node: Any) -> tuple[Any, set[str] | None] | None:
    """(the window `node` reads through row-by-row transforms, the names its start/end columns have at
    `node`'s input: None when a component in between did not validate), or None when no window is upstream
    that way."""
    chain = []
    cur = node
    while True:
        ins = [e for e in cur.inputs if e.role == "input"]
        if len(ins) != 1 or ins[0].label:
            return None
        cur = graph.nodes.get(ins[0].src)
        if cur is None:
            return None
        if cur.type == "window":
            break
        if cur.type not in ROW_BY_ROW:
            return None
        chain.append(cur)
    names = {"window_start", "window_end"}
    for t in reversed(chain):
        if t.type != "select":
            continue
        s = t.spec
        if not hasattr(s, "fields"):  # a select whose spec did not validate (reported there): names unknown
            return cur, None
        if s.fields is not None:
            kept = set()
            for f in s.fields:
                m = _AS.fullmatch(f)
                if m is not None and m.group(1).lower() in names:
                    kept.add((m.group(2) or m.group(1)).lower())
            names = kept
        names = {s.rename.get(n, n).lower() for n in names} - {d.lower() for d in s.drop}
    return cur, names


class TopNHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        cols = cx.first(inputs)
        for i, p in enumerate(self.partition_by):
            cx.need(cols, p, cx.span(node, "partition_by", i), cx.where(node, f"partition_by[{i}]"))
        for i, (c, _) in enumerate(order_terms(self.order_by)):
            cx.need(cols, c, cx.span(node, "order_by", i), cx.where(node, f"order_by[{i}]"))
        edge = next((e for e in node.inputs if e.role == "input"), None)
        at = (edge.span if edge is not None else None) or node.span
        (self._check_continuous if self.continuous else self._check_window)(cx, node, at)
        if cols is None:
            return None
        if self.rank is not None:
            cx.internal(node, self.rank, cx.span(node, "rank"))
            cols.pop(self.rank, None)
            cols[self.rank] = "int"
        cols.update(dict.fromkeys(self.flag_columns(), "boolean"))
        return cols

    def _check_window(self: Any, cx: Any, node: Any, at: Any) -> None:
        found = _window_names(cx.graph, node)
        if found is None:
            cx.report.error("E203", f"top_n '{node.id}' reads the final rows of a window (through filters, derives "
                            "and selects): its input is not one", at,
                            "rank per window: a window first, then top_n partitioned by window_start; or a "
                            "continuously updated TopN: `continuous: true`")
        elif not hasattr(found[0].spec, "emit") or found[1] is None:
            pass  # a window (or a select in between) whose spec did not validate: reported there
        elif found[0].spec.emit.early is not None or found[0].spec.emit.late == "update":
            cx.report.error("E104", f"top_n '{node.id}' reads window '{found[0].id}', whose rows of one window come in "
                            "several micro-batches (emit early or late: update)", at,
                            "rank the final rows of a window without `emit.early` / `late: update`")
        elif not found[1] & {p.lower() for p in self.partition_by}:
            cx.report.error("E104", f"top_n '{node.id}' ranks per window: partition_by needs the window's start or end "
                            f"column ({', '.join(sorted(found[1])) or 'not kept by the selects in between'})",
                            cx.span(node, "partition_by"), "add window_start to partition_by")

    def _check_continuous(self: Any, cx: Any, node: Any, at: Any) -> None:
        up = updating_input(cx.graph, node)
        if up is not None:
            cx.report.error("E104", f"top_n '{node.id}' ranks rows as they arrive: it reads the updates of {up.type} "
                            f"'{up.id}' (a key's later rows replace its earlier ones)", at,
                            "rank the input rows, or the final rows of a window (without `continuous`)")

    def flag_columns(self: Any) -> tuple[str, ...]:
        return (UPDATE,) if self.continuous else ()

    def explain_lines(self: Any) -> list[str]:
        per = " per " + ", ".join(self.partition_by) if self.partition_by else " overall"
        head = f"first {self.n}{per} by " + ", ".join(self.order_by) + (f", rank in {self.rank}" if self.rank else "")
        if not self.continuous:
            return [head + " (each window's final rows, per micro-batch)"]
        keys = ", ".join([*self.partition_by, self.rank])
        return [f"continuous: the rows whose rank changed, per changed key after each micro-batch (updates keyed by "
                f"{keys})", head + f" (state: the first {self.n} rows" + (" per key)" if self.partition_by else ")")]


@component("transform", "top_n", builder="etl.components.transforms.top_n.build:build")
class TopNTransform(TopNHooks, TransformBase):
    """The first n rows per partition by an order: of each window's final rows (Flink's window TopN), or
    continuously updated (`continuous: true`)."""

    type: Literal["top_n"]
    partition_by: list[str] = Field(default_factory=list, description="per window: the window's start (or end) "
                                    "column and any keys; continuous: the keys (none: one global ranking)")
    order_by: list[str] = Field(min_length=1, description="columns, each optionally followed by ASC or DESC")
    n: int = Field(ge=1, description="rows kept per partition")
    rank: Identifier | None = Field(default=None, description="output column with the rank (1..n); required with "
                                    "`continuous` (the updates' key, with partition_by)")
    continuous: bool = Field(default=False, description="a continuously updated TopN over rows as they arrive (no "
                             "window): the state keeps each key's first n rows, each micro-batch writes the rows "
                             "whose rank changed, flagged `_update`")
    PASSES_UPDATES: ClassVar[bool] = False

    def is_stateful(self) -> bool:
        return self.continuous

    def updates_keys(self) -> bool:
        return self.continuous

    def update_keys(self) -> str:
        return ", ".join([*self.partition_by, self.rank or "the rank"])

    def update_flags(self) -> tuple[str, ...]:
        return self.flag_columns()

    @model_validator(mode="after")
    def _shape(self) -> TopNTransform:
        if self.continuous and self.rank is None:
            raise ValueError("a continuous top_n writes updates keyed by partition_by and the rank: name the rank "
                             "column (`rank: rownum`)")
        if not self.continuous and not self.partition_by:
            raise ValueError("a top_n per window needs partition_by with the window's start or end column")
        return self

    @field_validator("order_by")
    @classmethod
    def _terms(cls, order_by: list[str]) -> list[str]:
        for o in order_by:
            if _ORDER.fullmatch(o) is None:
                raise ValueError(f"invalid order_by entry {o!r}: a column, optionally followed by ASC or DESC")
        return order_by
