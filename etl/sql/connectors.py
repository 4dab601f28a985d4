"""WITH (...) options of a CREATE TABLE -> an etl source or sink spec (as a plain mapping).

Keys are read as rsqldb and Flink spell them, case-insensitively: `type` or
`connector` picks the component, by the names its spec declares (SQL_CONNECTORS: rocketmq, kafka, file, print,
db/rds/mysql/jdbc, es/elasticsearch, generator ...), and its spec's SQL_OPTIONS (a "module:function" in the
component's folder, etl/components/<kind>s/<type>/sql.py) maps the table's options onto it with Opts and Mapped
below. A key that is a field of the etl spec itself
(`batch_size`, `starting`, ...) is passed through as written; a sink's buffering, flush and retry keys
(Flink's `sink.buffer-flush.*`, `sink.bulk-flush.*`, `sink.max-retries`, Blink's `batchSize` ...) map onto
its spec's settings (etl.sql.sink_options). Any other key is reported at its position with the closest
known key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from etl import registry
from etl.diagnostics import Report, Span, did_you_mean
from etl.spec.base import Duration
from etl.sql.ddl import Option, Table
from etl.sql.sink_options import sink_settings

@dataclass
class Mapped:
    type: str
    spec: dict[str, Any] = field(default_factory=dict)
    spans: dict[str, tuple[Span, Span]] = field(default_factory=dict)  # spec key -> (key span, value span)
    parse: dict[str, Any] | None = None  # a csv parse step for delimited messages


class Opts:
    def __init__(self, table: Table, family: str, role: str, report: Report):
        self.table, self.family, self.role, self.report = table, family, role, report
        self.by: dict[str, Option] = {}
        for o in table.options:
            first = self.by.setdefault(o.key.lower(), o)
            if first is not o:  # keys are case-insensitive: the first one counts
                report.error("E104", f"duplicate option '{o.key}' in WITH (...) of table '{table.name}'", o.key_span,
                             f"it is given at line {first.key_span.line}, column {first.key_span.col} already: "
                             "keep one")
        self.used: set[str] = {"type", "connector"}
        self.known: set[str] = {"type", "connector"}

    def get(self, *names: str) -> Option | None:
        for n in names:
            self.known.add(n)
        for n in names:
            o = self.by.get(n.lower())
            if o is not None:
                self.used.add(n.lower())
                return o
        return None

    def put(self, m: Mapped, key: str, value: Any, opt: Option | None) -> None:
        m.spec[key] = value
        if opt is not None:
            m.spans[key] = (opt.key_span, opt.value_span)

    def copy(self, m: Mapped, key: str, *names: str, conv: Callable[[str], Any] = lambda v: v) -> Option | None:
        o = self.get(*names)
        if o is not None:
            self.put(m, key, conv(o.value), o)
        return o

    def require(self, m: Mapped, key: str, *names: str, conv: Callable[[str], Any] = lambda v: v) -> None:
        if self.copy(m, key, *names, conv=conv) is None:
            self.report.error("E101", f"missing option '{names[0]}' in WITH (...) of table '{self.table.name}'",
                              self.table.with_span or self.table.span,
                              f"{self.family} {self.role}: add {names[0]} = '...'")

    def flag(self, *names: str) -> bool | None:
        o = self.get(*names)
        return None if o is None else str(o.value).lower() in ("true", "1", "yes")


def ms(value: str) -> str:
    return f"{value}ms" if re.fullmatch(r"\d+", str(value).strip()) else value


_JAVA_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "b": "\b", "0": "\0", "\\": "\\", "'": "'", '"': '"'}


def delimiter(value: str) -> str:
    """A delimiter option as Flink's csv format reads it (Java escapes: '\\t' is a tab, '\\u0001' is U+0001): a
    SQL string literal keeps its backslashes (Flink's lexical rules), the format unescapes them."""
    return re.sub(r"\\(u[0-9A-Fa-f]{4}|[tnrfb0\\'\"])",
                  lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u" else _JAVA_ESCAPES[m.group(1)],
                  str(value))


def csv_parse(t: Table, field_: str, delimiter: str) -> dict[str, Any]:
    """Delimited message bodies -> the declared (non-metadata) columns."""
    return {"type": "parse", "field": field_, "format": "csv", "schema": t.schema(), "delimiter": delimiter,
            "keep_original": False}


def no_json_arrays(o: Opts) -> None:
    arr = o.get("msgIsJsonArray")
    if arr is not None and str(arr.value).lower() == "true":
        o.report.error("E011", "msgIsJsonArray = 'true' is not supported: one message (or line) is one JSON row",
                       arr.value_span, "send one JSON object per message")


def message_format(o: Opts, m: Mapped, value_col: str) -> None:
    no_json_arrays(o)
    js = o.flag("isJsonData")
    fmt = o.get("format")
    delim = o.get("fieldDelimiter", "csv.field-delimiter")
    text = js is False or (fmt is not None and str(fmt.value).lower() == "csv")
    if fmt is not None and not text:
        o.put(m, "format", {"json": "json", "raw": "raw", "text": "text"}.get(str(fmt.value).lower(), fmt.value), fmt)
    if text:
        o.put(m, "format", "text", fmt or o.by.get("isjsondata"))
        m.parse = csv_parse(o.table, value_col, delimiter(delim.value) if delim is not None else ",")
    elif o.table.schema() and m.spec.get("format", "json") == "json":
        m.spec["schema"] = o.table.schema()


def client_properties(o: Opts, m: Mapped, given: dict[str, tuple[str, Option]]) -> None:
    """Flink's `'properties.<name>' = '...'`: Kafka client settings, the spec's `options` (as they are named). A
    name close to bootstrap.servers or group.id is taken for a misspelling of it (E100 with did-you-mean)."""
    props = dict(given)
    for key, opt in o.by.items():
        if key.startswith("properties.") and key not in o.used \
                and did_you_mean(key[len("properties."):], ("bootstrap.servers", "group.id")) is None:
            o.used.add(key)
            props[opt.key[len("properties."):]] = (str(opt.value), opt)
    if props:
        o.put(m, "options", {k: v for k, (v, _) in props.items()}, next(iter(props.values()))[1])


def families() -> dict[str, str]:
    """Connector name (lower case) -> component type, from the SQL_CONNECTORS of every registered source and sink."""
    return {name.lower(): e.type for kind in ("source", "sink") for e in registry.entries(kind).values()
            for name in getattr(e.spec, "SQL_CONNECTORS", ())}


IGNORED = frozenset({"driver", "pullintervalms", "accessid", "accesskey", "startmessageoffset", "encoding", "maxthread",
                     "batchsize", "flushinterval", "timeout", "ignore-parse-errors", "json.ignore-parse-errors"})


def map_table(table: Table, role: str, report: Report) -> Mapped | None:
    """`role`: source, dim (a dimension table of a lookup) or sink."""
    opt = next((o for o in table.options if o.key.lower() in ("type", "connector")), None)
    if opt is None:
        report.error("E101", f"table '{table.name}' has no connector: add WITH (type = '...')",
                     table.with_span or table.span, "types: " + ", ".join(sorted(families())))
        return None
    types = families()
    family = types.get(str(opt.value).lower())
    if family is None:
        report.error("E103", f"unknown connector type '{opt.value}'", opt.value_span,
                     did_you_mean(str(opt.value).lower(), types) or "types: " + ", ".join(sorted(types)))
        return None
    kind = "sink" if role == "sink" else "source"
    entry = registry.entries(kind).get(family)
    if entry is None:
        report.error("E203", f"a {family} table cannot be a {kind} (table '{table.name}')", opt.value_span)
        return None
    before = len(report.errors)
    m = Mapped(family, {"type": family}, {"type": (opt.key_span, opt.value_span)})
    o = Opts(table, family, "sink" if role == "sink" else role, report)
    mapper = getattr(entry.spec, "SQL_OPTIONS", None)
    if mapper:
        registry.load(mapper)(o, m)
    if kind == "sink":
        sink_settings(o, m)
    spec_fields = _spec_keys(entry.spec)
    for key, option in o.by.items():
        if key in o.used:
            continue
        if option.key in spec_fields:  # an etl spec field, passed through
            o.put(m, option.key, option.value, option)
            continue
        if key in IGNORED:
            report.warning("W013", f"option '{option.key}' has no effect in etl", option.key_span)
            continue
        known = sorted(o.known | spec_fields)
        report.error("E100", f"unknown option '{option.key}' for a {family} {kind}", option.key_span,
                     did_you_mean(option.key, known)
                     or "options: " + ", ".join(sorted(o.known - {"type", "connector"})))
    if len(report.errors) > before:  # reported here: the table is left out (no second error from the spec)
        return None
    if table.watermark is not None and kind == "source":
        col, secs, span = table.watermark
        m.spec["event_time"] = {"field": col, "watermark": str(Duration(secs))}
        m.spans["event_time"] = (span, span)
    return m


def _spec_keys(spec: Any) -> set[str]:
    out = set()
    for name, f in spec.model_fields.items():
        if name in ("id", "type", "inputs", "schema_", "event_time"):
            continue
        out.add(f.alias or name)
    return out
