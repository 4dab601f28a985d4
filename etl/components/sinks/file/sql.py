"""rsqldb's and Flink's file table options -> the file sink."""

from __future__ import annotations

from etl.sql.connectors import Mapped, Opts, no_json_arrays


def map_options(o: Opts, m: Mapped) -> None:
    o.require(m, "path", "filePath", "fileName", "path")
    no_json_arrays(o)
    js = o.flag("isJsonData")
    fmt = o.get("format")
    o.get("fieldDelimiter", "csv.field-delimiter")  # known: a sink's csv is comma-separated
    if js is False or (fmt is not None and str(fmt.value).lower() == "csv"):
        o.put(m, "format", "csv", fmt or o.by.get("isjsondata"))
    elif fmt is not None:
        o.put(m, "format", {"json": "jsonl"}.get(str(fmt.value).lower(), str(fmt.value).lower()), fmt)
