"""WITH (...) options of a CREATE TABLE -> an etl source or sink spec (as a plain mapping).

Keys are read as rsqldb and Flink spell them, case-insensitively: `type` or
`connector` picks the family (rocketmq, kafka, file, print, db/rds/mysql/jdbc,
es/elasticsearch, generator). A key that is a field of the etl spec itself
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
from etl.spec.endpoints import JDBC_URL
from etl.sql.ddl import Option, Table
from etl.sql.sink_options import sink_settings

FAMILIES = {
    "rocketmq": "rocketmq", "rocketmq-x": "rocketmq", "metaq": "rocketmq",
    "kafka": "kafka", "file": "file", "filesystem": "file", "print": "print",
    "db": "mysql", "rds": "mysql", "mysql": "mysql", "jdbc": "mysql",
    "es": "elasticsearch", "elasticsearch": "elasticsearch", "elasticsearch-7": "elasticsearch",
    "generator": "generator", "datagen": "generator",
}
KINDS = ("choice", "weights", "int_range", "float_range", "sequence", "ipv4", "template", "timestamp", "const")


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


def _ms(value: str) -> str:
    return f"{value}ms" if re.fullmatch(r"\d+", str(value).strip()) else value


_JAVA_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "b": "\b", "0": "\0", "\\": "\\", "'": "'", '"': '"'}


def _delimiter(value: str) -> str:
    """A delimiter option as Flink's csv format reads it (Java escapes: '\\t' is a tab, '\\u0001' is U+0001): a
    SQL string literal keeps its backslashes (Flink's lexical rules), the format unescapes them."""
    return re.sub(r"\\(u[0-9A-Fa-f]{4}|[tnrfb0\\'\"])",
                  lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u" else _JAVA_ESCAPES[m.group(1)],
                  str(value))


def _csv_parse(t: Table, field_: str, delimiter: str) -> dict[str, Any]:
    """Delimited message bodies -> the declared (non-metadata) columns."""
    return {"type": "parse", "field": field_, "format": "csv", "schema": t.schema(), "delimiter": delimiter,
            "keep_original": False}


def _rocketmq(o: Opts, m: Mapped) -> None:
    o.require(m, "namesrv", "namesrvAddr", "nameserver.address")
    o.require(m, "topic", "topic")
    o.copy(m, "group", "groupName", "consumerGroup", "consumer.group")
    if o.role == "sink":
        o.copy(m, "tag", "tag")
        return
    o.copy(m, "tags", "tag", "tags")
    _message_format(o, m, "value")


def _no_json_arrays(o: Opts) -> None:
    arr = o.get("msgIsJsonArray")
    if arr is not None and str(arr.value).lower() == "true":
        o.report.error("E011", "msgIsJsonArray = 'true' is not supported: one message (or line) is one JSON row",
                       arr.value_span, "send one JSON object per message")


def _message_format(o: Opts, m: Mapped, value_col: str) -> None:
    _no_json_arrays(o)
    js = o.flag("isJsonData")
    fmt = o.get("format")
    delim = o.get("fieldDelimiter", "csv.field-delimiter")
    text = js is False or (fmt is not None and str(fmt.value).lower() == "csv")
    if fmt is not None and not text:
        o.put(m, "format", {"json": "json", "raw": "raw", "text": "text"}.get(str(fmt.value).lower(), fmt.value), fmt)
    if text:
        o.put(m, "format", "text", fmt or o.by.get("isjsondata"))
        m.parse = _csv_parse(o.table, value_col, _delimiter(delim.value) if delim is not None else ",")
    elif o.table.schema() and m.spec.get("format", "json") == "json":
        m.spec["schema"] = o.table.schema()


def _kafka(o: Opts, m: Mapped) -> None:
    o.require(m, "bootstrap_servers", "bootstrap.servers", "properties.bootstrap.servers")
    group = o.get("group.id", "properties.group.id")
    if o.role == "sink":
        o.require(m, "topic", "topic")
        o.get("format")
        _client_properties(o, m, {})
        return
    if o.get("topic-pattern") is None:
        o.require(m, "topics", "topic", conv=lambda v: [x.strip() for x in v.replace(";", ",").split(",")])
    else:
        o.copy(m, "pattern", "topic-pattern")
    _client_properties(o, m, {} if group is None else {"group.id": (str(group.value), group)})
    _startup_mode(o, m)
    _message_format(o, m, "value")


def _client_properties(o: Opts, m: Mapped, given: dict[str, tuple[str, Option]]) -> None:
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


STARTUP = {"earliest-offset": "earliest", "latest-offset": "latest", "earliest": "earliest", "latest": "latest"}


def _startup_mode(o: Opts, m: Mapped) -> None:
    """Flink's scan.startup.mode: earliest-offset, latest-offset, specific-offsets (one topic; Spark wants every
    partition named), timestamp (Spark's startingTimestamp); group-offsets has no etl equivalent."""
    mode = o.get("scan.startup.mode")
    offsets = o.get("scan.startup.specific-offsets")
    millis = o.get("scan.startup.timestamp-millis")
    if mode is None:
        return
    value = str(mode.value).strip().lower()
    if value in STARTUP:
        o.put(m, "starting_offsets", STARTUP[value], mode)
    elif value == "specific-offsets" and offsets is not None:
        topics = m.spec.get("topics") or []
        parsed = _specific_offsets(str(offsets.value))
        if len(topics) != 1 or parsed is None:
            o.report.error("E102", f"invalid scan.startup.specific-offsets '{offsets.value}'", offsets.value_span,
                           "one topic and 'partition:0,offset:42;partition:1,offset:300'")
        else:
            o.put(m, "starting_offsets", {topics[0]: parsed}, offsets)
    elif value == "specific-offsets":
        o.report.error("E101", "scan.startup.mode = 'specific-offsets' needs 'scan.startup.specific-offsets'",
                       mode.value_span, "add 'scan.startup.specific-offsets' = 'partition:0,offset:42;...'")
    elif value == "timestamp" and millis is not None and re.fullmatch(r"\d+", str(millis.value).strip()):
        m.spec.setdefault("options", {})["startingTimestamp"] = str(millis.value).strip()  # Spark's own option
        m.spans.setdefault("options", (millis.key_span, millis.value_span))
    elif value == "timestamp":
        o.report.error("E101" if millis is None else "E102",
                       "scan.startup.mode = 'timestamp' needs 'scan.startup.timestamp-millis' (epoch milliseconds)",
                       (mode if millis is None else millis).value_span, "e.g. 'scan.startup.timestamp-millis' = "
                       "'1767225600000'")
    else:
        o.report.error("E011", f"scan.startup.mode '{mode.value}' is not supported", mode.value_span,
                       "use 'earliest-offset', 'latest-offset', 'specific-offsets' or 'timestamp'; a restarted etl "
                       "pipeline resumes from its checkpoint, not from the group's committed offsets")


def _specific_offsets(text: str) -> dict[str, int] | None:
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(";") if p.strip()):
        g = re.fullmatch(r"partition\s*:\s*(\d+)\s*,\s*offset\s*:\s*(-?\d+)", part, re.IGNORECASE)
        if g is None:
            return None
        out[g.group(1)] = int(g.group(2))
    return out or None


def _file(o: Opts, m: Mapped) -> None:
    o.require(m, "path", "filePath", "fileName", "path")
    _no_json_arrays(o)
    js = o.flag("isJsonData")
    fmt = o.get("format")
    delim = o.get("fieldDelimiter", "csv.field-delimiter")
    if js is False or (fmt is not None and str(fmt.value).lower() == "csv"):
        o.put(m, "format", "csv", fmt or o.by.get("isjsondata"))
        if o.role != "sink":
            m.spec["header"] = False
            if delim is not None:
                o.put(m, "delimiter", _delimiter(delim.value), delim)
    elif fmt is not None:
        o.put(m, "format", {"json": "jsonl"}.get(str(fmt.value).lower(), str(fmt.value).lower()), fmt)
    if o.role != "sink" and o.table.schema():
        m.spec["schema"] = o.table.schema()


def _print(o: Opts, m: Mapped) -> None:
    if o.role != "sink":
        o.report.error("E203", f"a print table is a sink only: table '{o.table.name}' is read", o.table.span,
                       "INSERT INTO it instead")


def _mysql(o: Opts, m: Mapped) -> None:
    url = o.get("url")
    if url is None:
        o.require(m, "database", "url")
    else:
        u = JDBC_URL.match(str(url.value))
        if u is None:
            o.report.error("E102", f"invalid JDBC url '{url.value}'", url.value_span,
                           "write 'jdbc:mysql://host:3306/database'")
        else:
            o.put(m, "host", u.group(1), url)
            if u.group(2):
                o.put(m, "port", int(u.group(2)), url)
            o.put(m, "database", u.group(3), url)
    o.require(m, "table", "tableName", "table-name")
    o.require(m, "user", "userName", "username")
    o.copy(m, "password", "password")
    if o.role == "sink":
        if o.table.primary_key:
            m.spec.update(mode="upsert", key=list(o.table.primary_key))
    else:
        o.copy(m, "refresh", "cacheTTLMs", "lookup.cache.ttl", conv=_ms)
        if o.table.schema():
            m.spec["schema"] = o.table.schema()


def _es(o: Opts, m: Mapped) -> None:
    host = o.get("endPoint", "host", "hosts")
    port = o.get("port")
    if host is None:
        o.require(m, "hosts", "endPoint")
    else:
        h = str(host.value)
        hosts = [x.strip() for x in h.split(",") if x.strip()]
        hosts = [x if "://" in x else f"http://{x}" for x in hosts]
        if port is not None:
            hosts = [x if re.search(r":\d+$", x) else f"{x}:{port.value}" for x in hosts]
        o.put(m, "hosts", hosts, host)
    o.require(m, "index", "esIndex", "index")
    o.copy(m, "username", "authUsername", "username")
    o.copy(m, "password", "authPassword", "password")
    if o.table.primary_key:
        m.spec["id_fields"] = list(o.table.primary_key)


def _generator(o: Opts, m: Mapped) -> None:
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
            fields[col][kind] = _gen_value(kind, str(opt.value), o.table, col)
            m.spans[f"fields.{col}"] = (opt.key_span, opt.value_span)
    for c in o.table.columns:
        if not fields[c.name] and not any(k.lower().startswith(f"fields.{c.name.lower()}.") for k in o.by):
            o.report.error("E101", f"generator column '{c.name}' has no fields.{c.name}.<kind> option",
                           c.span, "e.g. 'fields." + c.name + ".int_range' = '1,100'")
    m.spec["fields"] = fields


def _gen_value(kind: str, text: str, table: Table, col: str) -> Any:
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


MAPPERS: dict[str, Callable[[Opts, Mapped], None]] = {
    "rocketmq": _rocketmq, "kafka": _kafka, "file": _file, "print": _print, "mysql": _mysql,
    "elasticsearch": _es, "generator": _generator,
}
IGNORED = frozenset({"driver", "pullintervalms", "accessid", "accesskey", "startmessageoffset", "encoding", "maxthread",
                     "batchsize", "flushinterval", "timeout", "ignore-parse-errors", "json.ignore-parse-errors"})


def map_table(table: Table, role: str, report: Report) -> Mapped | None:
    """`role`: source, dim (a dimension table of a lookup) or sink."""
    opt = next((o for o in table.options if o.key.lower() in ("type", "connector")), None)
    if opt is None:
        report.error("E101", f"table '{table.name}' has no connector: add WITH (type = '...')",
                     table.with_span or table.span, "types: " + ", ".join(sorted(FAMILIES)))
        return None
    family = FAMILIES.get(str(opt.value).lower())
    if family is None:
        report.error("E103", f"unknown connector type '{opt.value}'", opt.value_span,
                     did_you_mean(str(opt.value).lower(), FAMILIES) or "types: " + ", ".join(sorted(FAMILIES)))
        return None
    kind = "sink" if role == "sink" else "source"
    entry = registry.entries(kind).get(family)
    if entry is None:
        report.error("E203", f"a {family} table cannot be a {kind} (table '{table.name}')", opt.value_span)
        return None
    before = len(report.errors)
    m = Mapped(family, {"type": family}, {"type": (opt.key_span, opt.value_span)})
    o = Opts(table, family, "sink" if role == "sink" else role, report)
    MAPPERS[family](o, m)
    if kind == "sink":
        sink_settings(o, m)
    if family == "file" and role == "dim":
        m.spec["static"] = True
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
