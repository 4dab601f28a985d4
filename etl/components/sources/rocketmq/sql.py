"""rsqldb's rocketmq table options (namesrvAddr, topic, tag, groupName, isJsonData ...) -> the rocketmq source."""

from __future__ import annotations

from etl.sql.connectors import Mapped, Opts, message_format


def connection(o: Opts, m: Mapped) -> None:
    """The name server, topic and group a rocketmq table names (a source's and a sink's)."""
    o.require(m, "namesrv", "namesrvAddr", "nameserver.address")
    o.require(m, "topic", "topic")
    o.copy(m, "group", "groupName", "consumerGroup", "consumer.group")


def map_options(o: Opts, m: Mapped) -> None:
    connection(o, m)
    o.copy(m, "tags", "tag", "tags")
    message_format(o, m, "value")
