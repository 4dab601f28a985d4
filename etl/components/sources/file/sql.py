"""rsqldb's and Flink's file table options (filePath/path, isJsonData, format, fieldDelimiter) -> the file
source (a lookup's dimension table: a static one)."""

from __future__ import annotations

from etl.sql.connectors import Mapped, Opts, delimiter, no_json_arrays


def map_options(o: Opts, m: Mapped) -> None:
    o.require(m, "path", "filePath", "fileName", "path")
    no_json_arrays(o)
    js = o.flag("isJsonData")
    fmt = o.get("format")
    delim = o.get("fieldDelimiter", "csv.field-delimiter")
    if js is False or (fmt is not None and str(fmt.value).lower() == "csv"):
        o.put(m, "format", "csv", fmt or o.by.get("isjsondata"))
        m.spec["header"] = False
        if delim is not None:
            o.put(m, "delimiter", delimiter(delim.value), delim)
    elif fmt is not None:
        o.put(m, "format", {"json": "jsonl"}.get(str(fmt.value).lower(), str(fmt.value).lower()), fmt)
    if o.table.schema():
        m.spec["schema"] = o.table.schema()
    if o.role == "dim":
        m.spec["static"] = True
