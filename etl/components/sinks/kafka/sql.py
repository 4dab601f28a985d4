"""Flink's kafka table options -> the kafka sink."""

from __future__ import annotations

from etl.sql.connectors import Mapped, Opts, client_properties


def map_options(o: Opts, m: Mapped) -> None:
    o.require(m, "bootstrap_servers", "bootstrap.servers", "properties.bootstrap.servers")
    o.get("group.id", "properties.group.id")  # known to a sink too (a consumer's setting: no effect)
    o.require(m, "topic", "topic")
    # Flink's 'exactly-once' / 'at-least-once' ('none' is not etl's: refused as an invalid delivery)
    o.copy(m, "delivery", "sink.delivery-guarantee", conv=lambda v: v.strip().lower().replace("-", "_"))
    o.get("format")
    client_properties(o, m, {})
