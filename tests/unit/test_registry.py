"""The closed registry: what a component must declare, and what the rest of etl reads from it."""

from __future__ import annotations

from typing import Literal

import pytest

from etl import registry
from etl.graph.model import Placeholder
from etl.spec.base import SinkBase, TransformBase
from etl.components.sinks.kafka.spec import KafkaSink
from etl.components.sinks.mysql.spec import MySQLSink
from etl.components.sinks.rocketmq.spec import RocketMQSink


def test_a_transform_without_its_hooks_is_refused_at_registration():
    with pytest.raises(TypeError) as e:
        @registry.component("transform", "nohooks_t")
        class NoHooks(TransformBase):
            type: Literal["nohooks_t"]
    assert str(e.value) == ("transform type 'nohooks_t' (NoHooks) does not define output_columns, explain_lines: "
                            "every transform declares them (see etl.registry.REQUIRED)")
    assert "nohooks_t" not in registry.types("transform")


def test_a_transform_with_one_hook_only_names_the_other():
    with pytest.raises(TypeError, match=r"\(Half\) does not define explain_lines:"):
        @registry.component("transform", "half_t")
        class Half(TransformBase):
            type: Literal["half_t"]

            def output_columns(self, cx, node, inputs):
                return cx.first(inputs)


def test_every_registered_component_declares_its_hooks():
    for kind in registry.KINDS:
        for typ, entry in registry.entries(kind).items():
            assert registry.missing_hooks(kind, entry.spec) == [], (kind, typ)
    assert registry.REQUIRED["transform"] == ("output_columns", "explain_lines")


def test_sinks_have_defaults_for_their_hooks():
    @registry.component("sink", "defaults_s")
    class Defaults(SinkBase):
        type: Literal["defaults_s"]

    spec = Defaults(id="o", type="defaults_s", inputs=["x"])
    assert spec.explain_lines() == [] and spec.replay_note() is None and spec.is_idempotent() is False
    registry._REGISTRY["sink"].pop("defaults_s")


def test_replay_notes_come_from_the_sink_specs():
    assert KafkaSink.REPLAY.startswith("one transaction per batch (transactional.id etl.<pipeline>.<sink>)")
    assert MySQLSink.REPLAY == "rows and a (pipeline, sink, batch id) row of table _etl_commits in one transaction"
    assert RocketMQSink.REPLAY.startswith("no transaction across a batch; each message carries")


def test_a_placeholder_is_static_as_its_registered_class_says():
    assert Placeholder("t", "mysql", "source").is_static() is True
    assert Placeholder("f", "file", "source").is_static() is False  # a file source is static only when it says so
    assert Placeholder("x", "no_such_type", "source").is_static() is False


def test_static_tables_name_their_reader():
    readers = {t: e.reader for t, e in registry.entries("source").items() if e.reader}
    assert readers == {"mysql": "etl.components.sources.mysql.build:read_mysql_table"}
    from etl.components.sources.mysql.build import read_mysql_table

    assert registry.lookup("source", "mysql").load_reader() is read_mysql_table
    assert registry.lookup("source", "file").load_reader() is None


@pytest.mark.parametrize("kind", registry.KINDS)
def test_every_registered_builder_imports(kind):
    """Each builder named in the registry (built-in or plugin) resolves to a callable; no JVM starts."""
    for typ, entry in registry.entries(kind).items():
        assert callable(entry.load_builder()), (kind, typ)


def test_raw_refs_let_references_to_an_invalid_component_resolve():
    from etl.components.transforms.filter.spec import FilterTransform
    from etl.components.transforms.lookup.spec import LookupTransform
    from etl.components.transforms.route.spec import RouteTransform

    assert RouteTransform.raw_refs({"routes": {"a": "x > 1", "b": "x < 0"}, "default": "rest"}) == (("a", "b", "rest"),
                                                                                                 None)
    assert RouteTransform.raw_refs({"routes": ["a"]}) == (None, None)
    assert LookupTransform.raw_refs({"table": "dim", "on": 3}) == (None, "dim")
    assert LookupTransform.raw_refs({"table": 7}) == (None, None)
    assert FilterTransform.raw_refs({"table": "dim"}) == (None, None)
