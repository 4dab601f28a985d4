"""Flink's datagen-style table options (number-of-rows, rows-per-second, fields.<column>.<kind>) -> the generator
source."""

from __future__ import annotations

import re
from typing import Any

from etl.diagnostics import did_you_mean
from etl.sql.connectors import Mapped, Opts
from etl.sql.ddl import Table


KINDS = ("choice", "weights", "int_range", "float_range", "sequence", "ipv4", "template", "timestamp", "const")


def map_options(o: Opts, m: Mapped) -> None:
    o.copy(m, "count", "count", "number-of-rows")
    o.copy(m, "rate", "rate", "rows-per-second")
    o.copy(m, "seed", "seed")
    o.copy(m, "start_time", "start_time", "start-time")
    fields: dict[str, dict] = {c.name: {} for c in o.table.columns}
    for key, opt in o.by.items():
        parts = opt.key.split(".")
        if len(parts) == 3 and parts[0].lower() == "fields":
            o.used.add(key)
            col, kind = parts[1], parts[2].lower()
            if col not in fields:
                o.report.error("E310", f"generator option for unknown column '{col}'", opt.key_span,
                               did_you_mean(col, fields) or f"columns: {', '.join(fields)}")
                continue
            if kind not in KINDS:
                o.report.error("E100", f"unknown generator kind '{parts[2]}'", opt.key_span,
                               did_you_mean(kind, KINDS) or f"kinds: {', '.join(KINDS)}")
                continue
            fields[col][kind] = _value(kind, str(opt.value), o.table, col)
            m.spans[f"fields.{col}"] = (opt.key_span, opt.value_span)
    for c in o.table.columns:
        if not fields[c.name] and not any(k.lower().startswith(f"fields.{c.name.lower()}.") for k in o.by):
            o.report.error("E101", f"generator column '{c.name}' has no fields.{c.name}.<kind> option",
                           c.span, "e.g. 'fields." + c.name + ".int_range' = '1,100'")
    m.spec["fields"] = fields


def _value(kind: str, text: str, table: Table, col: str) -> Any:
    typ = next((c.type for c in table.columns if c.name == col), "string")
    items = [x.strip() for x in text.split(",")]
    if kind == "choice":
        return [int(x) if typ in ("int", "bigint") and re.fullmatch(r"-?\d+", x) else x for x in items]
    if kind == "weights":
        return [float(x) if re.fullmatch(r"-?\d+(\.\d+)?", x) else x for x in items]
    if kind in ("int_range", "float_range"):
        return [int(x) if kind == "int_range" and re.fullmatch(r"-?\d+", x) else x for x in items]
    if kind == "sequence":
        return int(text) if re.fullmatch(r"-?\d+", text) else text
    if kind == "ipv4":
        return text.lower() in ("true", "1", "yes")
    return text
