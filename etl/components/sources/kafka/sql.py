"""Flink's kafka table options (properties.bootstrap.servers, topic, topic-pattern, scan.startup.mode, format,
'properties.*' client settings) -> the kafka source."""

from __future__ import annotations

import re

from etl.sql.connectors import Mapped, Opts, client_properties, message_format


def map_options(o: Opts, m: Mapped) -> None:
    o.require(m, "bootstrap_servers", "bootstrap.servers", "properties.bootstrap.servers")
    group = o.get("group.id", "properties.group.id")
    if o.get("topic-pattern") is None:
        o.require(m, "topics", "topic", conv=lambda v: [x.strip() for x in v.replace(";", ",").split(",")])
    else:
        o.copy(m, "pattern", "topic-pattern")
    client_properties(o, m, {} if group is None else {"group.id": (str(group.value), group)})
    _startup_mode(o, m)
    message_format(o, m, "value")


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
