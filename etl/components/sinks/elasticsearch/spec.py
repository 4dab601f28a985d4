"""The elasticsearch sink's spec: bulk-indexes rows into Elasticsearch or OpenSearch (document ids from `id_fields` make
it idempotent, an upsert by key)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import SinkBase
from etl.spec.endpoints import es_problems
from etl.spec.sinks import named_columns
from etl.spec.transport import HTTPTLS


@component("sink", "elasticsearch", builder="etl.components.sinks.elasticsearch.build:ElasticsearchSink")
class ElasticsearchSink(SinkBase, HTTPTLS):
    """Bulk indexing with deterministic document ids (idempotent on replay)."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("es", "elasticsearch", "elasticsearch-7")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sinks.elasticsearch.sql:map_options"

    type: Literal["elasticsearch"]
    hosts: list[str] = Field(min_length=1, description="http://host:port of Elasticsearch or OpenSearch")
    index: str = Field(description="index to write")
    id_fields: list[str] = Field(default_factory=list,
                                 description="document id from these fields (a hash of the whole row if empty)")
    username: str | None = Field(default=None, description="basic authentication: user name")
    password: str | None = Field(default=None, description="basic authentication: password")

    REPLAY: ClassVar[str | None] = ("_bulk index with deterministic document ids (id_fields, else a hash of the row): "
                                    "a replay overwrites the same documents")

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"es:{','.join(self.hosts)}/{self.index}"

    def upsert_key(self) -> str | None:
        return f"document id from ({', '.join(self.id_fields)})" if self.id_fields else None

    def output_columns(self, cx: Any, node: Any, inputs: list) -> dict[str, str] | None:
        return named_columns(cx, node, inputs, "id_fields", self.id_fields)

    def endpoint_problems(self) -> list[tuple[tuple, Any, str]]:
        return es_problems(self)

    @classmethod
    def keyed_mapping(cls, raw: dict) -> bool:
        return bool(raw.get("id_fields"))

    def https_lines(self) -> list[str]:
        if not any(h.startswith("https:") for h in self.hosts):
            return []
        bits = [f"{name} {getattr(self, f)}" for f, name in (("ca_file", "ca"), ("cert_file", "client cert"))
                if getattr(self, f) is not None]
        bits.append("certificate checked" if self.verify else "certificate NOT checked (verify: false)")
        return ["https: " + ", ".join(bits)]
