"""What a connector may use of the engine: the one module connectors import instead of compile internals.

A source builder gets a CompileContext and its Node and returns a DataFrame (or
a Built with dead letters); it raises CompileError for a problem the user must
act on. Stages that can fail on a row keep its reason in ERR and its text in
PAYLOAD, and `from_shared` splits good rows from dead letters. Sinks build on
etl.runtime.sink (AbstractSink), one layer below the connectors.
"""

from __future__ import annotations

from typing import Any

from etl.compile import jvm
from etl.compile.bounds import WORKER_ENDED
from etl.compile.context import CompileContext, CompileError
from etl.compile.deadletter import OVER, as_shared, from_shared, within_record_size
from etl.compile.json_parse import json_parser, json_struct
from etl.compile.watermark import with_event_time
from etl.dead_letters import ERR, PAYLOAD
from etl.runtime.session import MissingConnector, require_class
from etl.workercache import owned_by

__all__ = ["ERR", "OVER", "PAYLOAD", "CompileContext", "CompileError", "MissingConnector", "WORKER_ENDED", "as_shared",
           "from_shared", "json_parser", "json_struct", "jvm",
           "register_data_source", "require_class", "with_event_time", "within_record_size"]


def register_data_source(spark: Any, source_cls: type) -> None:
    """Register a Python data source with this session once (registering again logs a warning)."""
    key = f"{source_cls.__module__}.{source_cls.__qualname__}"
    registered = owned_by(spark).setdefault("data sources registered", set())
    if key not in registered:
        spark.dataSource.register(source_cls)
        registered.add(key)
