"""Message size limits of the kafka sink: the topic's limit, and chunks without the messages refused."""

from __future__ import annotations

from typing import Any

DEFAULT_MAX_MESSAGE = 1_000_000  # librdkafka's message.max.bytes


def topic_max_message(conf: dict[str, Any], topic: str, timeout: float) -> int | None:
    """The topic's max.message.bytes (the broker's default when the topic has none); None if unknown."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({**conf, "log_level": 0})
    try:
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        entries = admin.describe_configs([res], request_timeout=timeout)[res].result(timeout)
        return int(entries["max.message.bytes"].value)
    except Exception:  # noqa: BLE001 - a topic created on first write, or no right to describe it
        return None


def as_bytes(v: Any) -> bytes:
    return v.encode() if isinstance(v, str) else (v or b"")


def without(chunk: tuple[list, list, list | None], drop: set[int]) -> tuple[list, list, list | None]:
    """A chunk (keys, values, header columns) without the messages at `drop`."""
    if not drop:
        return chunk
    keys, values, headers = chunk
    keep = [i for i in range(len(keys)) if i not in drop]
    return ([keys[i] for i in keep], [values[i] for i in keep],
            [[hv[i] for i in keep] for hv in headers] if headers else None)
