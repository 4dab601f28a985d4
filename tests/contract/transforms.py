"""Transform contract adapters: one small class per transform type, registered with `@transform_adapter`.

Adding a transform to the suite (tests/contract/test_transform_contract.py) is one class:

    @transform_adapter
    class Mine(TransformAdapter):
        type = "mine"                                      # the transform's type
        spec = {"input": "events", "key": "user"}          # its fields (inputs name the adapter's sources)
        sources = {"events": In({"user": "string"}, [{"user": "a"}, {"user": None}])}
        expected = [{"user": "a"}]                         # the rows its sink gets
        dead = [("no key", '{"n":2}', None)]         # per dead letter: (reason substring, payload, field named)
        stateful = True                                    # heads a streaming query of its own
        misspelt = "key"                                   # the field whose misspelling must be one E100

The suite generates a pipeline per adapter (file sources -> the transform -> a file sink, ids prefixed with the
adapter's name so every adapter's chain fits in one pipeline file side by side), checks it without a JVM, and runs
all of them in one `etl run --once`. An adapter whose `module` is not importable (a plugin not on the path) is not
registered.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

TRANSFORM_ADAPTERS: dict[str, TransformAdapter] = {}
ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "fixtures" / "plugin"


def transform_adapter(cls: type[TransformAdapter]) -> type[TransformAdapter]:
    inst = cls()
    if inst.module is None or importlib.util.find_spec(inst.module) is not None:
        TRANSFORM_ADAPTERS[inst.name or inst.type] = inst
    return cls


@dataclass(frozen=True)
class In:
    """One input of the transform: a jsonl file source's columns and rows (a `static` one is a lookup table)."""

    columns: dict[str, str]
    rows: list[dict]
    event_time: dict | None = None
    static: bool = False


LINES = {"id": "bigint", "line": "string"}
CODES = {"id": "bigint", "code": "string"}
T0 = "2026-01-01T00:00:"
TIMED = {"id": "bigint", "k": "string", "ts": "timestamp"}
WATERMARK = {"field": "ts", "watermark": "1s"}


def codes() -> list[dict]:
    """Rows whose `code` casts to an int but one (id 3: 'x', which an ANSI cast fails on)."""
    return [{"id": 1, "code": "1"}, {"id": 2, "code": "2"}, {"id": 3, "code": "x"}, {"id": 4, "code": "3"}]


def timed(*items: tuple[int, str, int]) -> list[dict]:
    return [{"id": i, "k": k, "ts": f"{T0}{s:02d}Z"} for i, k, s in items]


class TransformAdapter:
    type: ClassVar[str] = ""
    name: ClassVar[str] = ""  # the adapter's name, when not its type
    module: ClassVar[str | None] = None  # a module that must be importable for the adapter to register
    spec: ClassVar[dict] = {}
    upstream: ClassVar[list[dict]] = []  # transforms its input needs first (ids local, as the spec's inputs)
    files: ClassVar[dict[str, Path]] = {}  # files its pipeline reads (name -> the repo's file), "{files}/name" in specs
    sources: ClassVar[dict[str, In]] = {}
    output: ClassVar[str | None] = None  # the route label its sink reads
    expected: ClassVar[list[dict]] = []
    # per dead letter: (a substring of its reason, its payload, the field whose position the reason starts with)
    dead: ClassVar[list[tuple[str, str, str | None]]] = []
    stateful: ClassVar[bool] = False
    misspelt: ClassVar[str] = ""  # a field of spec: misspelt, one E100 at its line

    @property
    def id(self) -> str:
        return self.name or self.type

    def ref(self, local: str) -> str:
        return f"{self.id}_{local}"

    def component(self, folder: Path, item: dict | None = None) -> dict:
        """The transform's mapping (or an upstream one's) with its ids, inputs and lookup table prefixed and
        "{files}" the folder of its files."""
        item = {"id": self.id, "type": self.type, **self.spec} if item is None else {**item, "id": self.ref(item["id"])}
        out: dict[str, Any] = {}
        for k, v in item.items():
            if k in ("input", "table"):
                v = self.ref(v)
            elif k == "inputs":
                v = [self.ref(x) for x in v]
            out[k] = json.loads(json.dumps(v).replace("{files}", str(folder / self.ref("files"))))
        return out

    def transform_items(self, folder: Path) -> list[dict]:
        return [self.component(folder, u) for u in self.upstream] + [self.component(folder)]

    def source_items(self, folder: Path) -> list[dict]:
        items = []
        for local, src in self.sources.items():
            path = folder / self.ref(local) / "in.jsonl"
            item: dict[str, Any] = {"id": self.ref(local), "type": "file", "path": str(path), "format": "jsonl",
                                    "schema": src.columns}
            if src.event_time:
                item["event_time"] = src.event_time
            if src.static:
                item["static"] = True
            items.append(item)
        return items

    def write_inputs(self, folder: Path) -> None:
        for local, src in self.sources.items():
            d = folder / self.ref(local)
            d.mkdir(parents=True, exist_ok=True)
            (d / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in src.rows))
        self.write_files(folder)

    def write_files(self, folder: Path) -> None:
        for name, f in self.files.items():
            (folder / self.ref("files")).mkdir(parents=True, exist_ok=True)
            (folder / self.ref("files") / name).write_bytes(f.read_bytes())

    def sink_item(self, folder: Path) -> dict:
        src = self.id + (f".{self.output}" if self.output else "")
        return {"id": self.ref("out"), "type": "file", "input": src, "path": str(folder / self.ref("out")),
                "format": "jsonl"}


def pipeline_text(adapters: list[TransformAdapter], folder: Path, name: str = "transform-contract",
                  misspell: str = "") -> tuple[str, dict[str, int]]:
    """The pipeline of the adapters' chains side by side, each transform in block style (one field a line), and
    the line of each transform field (`id.field` -> line): misspell `field` of the only adapter, if given."""
    lines = [f"name: {name}", "sources:"]
    for a in adapters:
        lines += ["  - " + json.dumps(s) for s in a.source_items(folder)]
    lines.append("transforms:")
    where: dict[str, int] = {}
    for a in adapters:
        for item in a.transform_items(folder):
            for i, (k, v) in enumerate(item.items()):
                where[f"{item['id']}.{k}"] = len(lines) + 1
                key = k + k[-1] if k == misspell and item["id"] == a.id else k  # "field" -> "fieldd"
                lines.append(("  - " if i == 0 else "    ") + f"{key}: {json.dumps(v)}")
    lines.append("sinks:")
    lines += ["  - " + json.dumps(a.sink_item(folder)) for a in adapters]
    lines += [f"checkpoint: {folder / 'checkpoint'}",
              "dead_letter: " + json.dumps({"type": "file", "path": str(folder / "dead_letters"), "format": "jsonl"})]
    return "\n".join(lines) + "\n", where


# ---------------------------------------------------------------------------------------------------- row by row


@transform_adapter
class Filter(TransformAdapter):
    type = "filter"
    spec = {"input": "in", "expr": "CAST(code AS INT) >= 2"}
    sources = {"in": In(CODES, codes())}
    expected = [{"id": 2, "code": "2"}, {"id": 4, "code": "3"}]
    dead = [("filter 'filter' expr: CAST_INVALID_INPUT", '{"id":3,"code":"x"}', "expr")]
    misspelt = "expr"


@transform_adapter
class Derive(TransformAdapter):
    type = "derive"
    spec = {"input": "in", "columns": {"n": "CAST(code AS INT) * 10"}}
    sources = {"in": In(CODES, codes())}
    expected = [{"id": 1, "code": "1", "n": 10}, {"id": 2, "code": "2", "n": 20}, {"id": 4, "code": "3", "n": 30}]
    dead = [("derive 'derive' column 'n': CAST_INVALID_INPUT", '{"id":3,"code":"x"}', "columns")]
    misspelt = "columns"


@transform_adapter
class Select(TransformAdapter):
    type = "select"
    spec = {"input": "in", "fields": ["id", "CAST(code AS INT) AS n"]}
    sources = {"in": In(CODES, codes())}
    expected = [{"id": 1, "n": 1}, {"id": 2, "n": 2}, {"id": 4, "n": 3}]
    dead = [("select 'select' field 'CAST(code AS INT) AS n': CAST_INVALID_INPUT", '{"id":3,"code":"x"}', "fields")]
    misspelt = "fields"


@transform_adapter
class Route(TransformAdapter):
    type = "route"
    spec = {"input": "in", "routes": {"big": "CAST(code AS INT) >= 2"}, "default": "small"}
    sources = {"in": In(CODES, codes())}
    output = "big"
    expected = [{"id": 2, "code": "2"}, {"id": 4, "code": "3"}]
    dead = [("route 'route' route 'big': CAST_INVALID_INPUT", '{"id":3,"code":"x"}', "routes")]
    misspelt = "routes"


@transform_adapter
class Grok(TransformAdapter):
    type = "grok"
    spec = {"input": "in", "field": "line", "pattern": "%{WORD:verb} %{INT:n:int}", "keep_original": False}
    sources = {"in": In(LINES, [{"id": 1, "line": "get 1"}, {"id": 2, "line": "put"}, {"id": 3, "line": "del 30"}])}
    expected = [{"id": 1, "verb": "get", "n": 1}, {"id": 3, "verb": "del", "n": 30}]
    dead = [("no match for grok pattern", "put", None)]
    misspelt = "pattern"


@transform_adapter
class Dissect(TransformAdapter):
    type = "dissect"
    spec = {"input": "in", "mapping": {"line": "%{verb} %{n}"}, "remove_field": ["line"]}
    sources = {"in": In(LINES, [{"id": 1, "line": "get 1"}, {"id": 2, "line": "put"}, {"id": 3, "line": "del 30"}])}
    expected = [{"id": 1, "verb": "get", "n": "1"}, {"id": 3, "verb": "del", "n": "30"}]
    dead = [("no match for dissect pattern", "put", None)]
    misspelt = "mapping"


@transform_adapter
class Parse(TransformAdapter):
    type = "parse"
    spec = {"input": "in", "field": "line", "format": "json", "schema": {"a": "bigint"}, "keep_original": False}
    sources = {"in": In(LINES, [{"id": 1, "line": '{"a": 5}'}, {"id": 2, "line": "{not json"},
                                {"id": 3, "line": '{"a": 7}'}])}
    expected = [{"id": 1, "a": 5}, {"id": 3, "a": 7}]
    dead = [("malformed json", "{not json", None)]
    misspelt = "format"


@transform_adapter
class Union(TransformAdapter):
    type = "union"
    spec = {"inputs": ["eu", "us"]}
    sources = {"eu": In(CODES, codes()[:2]), "us": In(CODES, codes()[3:])}
    expected = [{"id": 1, "code": "1"}, {"id": 2, "code": "2"}, {"id": 4, "code": "3"}]
    misspelt = "inputs"


# ---------------------------------------------------------------------------------------------------- stateful


@transform_adapter
class Dedupe(TransformAdapter):
    type = "dedupe"
    spec = {"input": "in", "keys": ["k"]}
    sources = {"in": In(TIMED, timed((1, "a", 1), (2, "b", 2), (3, "a", 3)), WATERMARK)}
    expected = [{"id": 1, "k": "a", "ts": f"{T0}01.000Z"}, {"id": 2, "k": "b", "ts": f"{T0}02.000Z"}]
    stateful = True
    misspelt = "keys"


@transform_adapter
class Aggregate(TransformAdapter):
    type = "aggregate"
    spec = {"input": "in", "group_by": ["k"], "aggregates": [{"fn": "count", "as": "n"}]}
    sources = {"in": In(TIMED, timed((1, "a", 1), (2, "b", 2), (3, "a", 3)))}
    expected = [{"k": "a", "n": 2, "_update": False}, {"k": "b", "n": 1, "_update": False}]  # its last row per key
    stateful = True
    misspelt = "group_by"


@transform_adapter
class Window(TransformAdapter):
    type = "window"
    spec = {"input": "in", "kind": "tumbling", "size": "10s", "group_by": ["k"],
            "aggregates": [{"fn": "count", "as": "n"}]}
    # the row at :40 moves the watermark past the first window, which closes
    sources = {"in": In(TIMED, timed((1, "a", 1), (2, "a", 5), (3, "b", 12), (4, "a", 40)), WATERMARK)}
    expected = [{"k": "a", "window_start": f"{T0}00.000Z", "window_end": f"{T0}10.000Z", "n": 2},
                {"k": "b", "window_start": f"{T0}10.000Z", "window_end": f"{T0}20.000Z", "n": 1}]
    stateful = True
    misspelt = "size"


@transform_adapter
class TopN(TransformAdapter):
    type = "top_n"
    spec = {"input": "in", "order_by": ["id DESC"], "n": 2, "partition_by": ["k"], "continuous": True,
            "rank": "rank"}
    sources = {"in": In(TIMED, timed((1, "a", 1), (2, "a", 2), (3, "a", 3), (4, "b", 4)))}
    expected = [{"id": 3, "k": "a", "ts": f"{T0}03.000Z", "rank": 1, "_update": False},
                {"id": 2, "k": "a", "ts": f"{T0}02.000Z", "rank": 2, "_update": False},
                {"id": 4, "k": "b", "ts": f"{T0}04.000Z", "rank": 1, "_update": False}]
    stateful = True
    misspelt = "order_by"


@transform_adapter
class Join(TransformAdapter):
    type = "join"
    spec = {"inputs": ["left", "right"], "on": ["k"], "within": "5s"}
    sources = {"left": In(TIMED, timed((1, "a", 1), (2, "b", 2)), WATERMARK),
               "right": In({"k": "string", "v": "bigint", "ts2": "timestamp"},
                           [{"k": "a", "v": 10, "ts2": f"{T0}03Z"}, {"k": "b", "v": 20, "ts2": f"{T0}30Z"}],
                           {"field": "ts2", "watermark": "1s"})}
    expected = [{"id": 1, "k": "a", "ts": f"{T0}01.000Z", "v": 10, "ts2": f"{T0}03.000Z"}]
    stateful = True
    misspelt = "within"


@transform_adapter
class Lookup(TransformAdapter):
    type = "lookup"
    spec = {"input": "in", "table": "users", "on": {"k": "k"}, "fields": ["name"]}
    sources = {"in": In(TIMED, timed((1, "a", 1), (2, "z", 2))),
               "users": In({"k": "string", "name": "string"}, [{"k": "a", "name": "ann"}], static=True)}
    expected = [{"id": 1, "k": "a", "ts": f"{T0}01.000Z", "name": "ann"},
                {"id": 2, "k": "z", "ts": f"{T0}02.000Z"}]  # no name: Spark's json writer leaves NULL fields out
    stateful = True
    misspelt = "fields"


@transform_adapter
class RegularJoin(TransformAdapter):
    type = "regular_join"
    spec = {"inputs": ["left", "right"], "on": ["k"], "ttl": "1h"}
    sources = {"left": In(TIMED, timed((1, "a", 1), (2, "b", 2))),
               "right": In({"k": "string", "v": "bigint"}, [{"k": "a", "v": 10}, {"k": "c", "v": 30}])}
    expected = [{"id": 1, "k": "a", "ts": f"{T0}01.000Z", "v": 10}]
    stateful = True
    misspelt = "ttl"


@transform_adapter
class TemporalJoin(TransformAdapter):
    type = "temporal_join"
    spec = {"inputs": ["orders", "rates"], "on": ["k"], "how": "left"}
    sources = {"orders": In(TIMED, timed((1, "a", 5), (2, "a", 15), (3, "b", 40)), WATERMARK),
               "rates": In({"k": "string", "rate": "bigint", "since": "timestamp"},
                           [{"k": "a", "rate": 1, "since": f"{T0}00Z"}, {"k": "a", "rate": 2, "since": f"{T0}10Z"},
                            {"k": "b", "rate": 9, "since": f"{T0}50Z"}],
                           {"field": "since", "watermark": "1s"})}
    # id 3 (at :40) waits for the watermark to pass it, which its input's (:39) has not: no row yet, as in Flink
    expected = [{"id": 1, "k": "a", "ts": f"{T0}05.000Z", "rate": 1, "since": f"{T0}00.000Z"},
                {"id": 2, "k": "a", "ts": f"{T0}15.000Z", "rate": 2, "since": f"{T0}10.000Z"}]
    stateful = True
    misspelt = "how"


TAGS = ["attack.credential_access", "attack.t1110"]


@transform_adapter
class SigmaCorrelation(TransformAdapter):
    """The example's first test (pipelines/example_sigma_correlation.yaml): its input is a Sigma filter's alerts,
    the correlation rules those of the filter's Sigma file."""

    type = "sigma_correlation"
    upstream = [{"id": "alerts", "type": "filter", "input": "in", "mode": "alerts",
                 "sigma": {"paths": ["{files}/logons.yml"]}}]
    files = {"logons.yml": ROOT / "pipelines" / "rules" / "sigma" / "logons.yml"}
    spec = {"input": "alerts"}
    sources = {"in": In({"ts": "timestamp", "EventID": "int", "TargetUserName": "string"},
                        [{"ts": "2026-01-10T09:00:05Z", "EventID": 4625, "TargetUserName": "alice"},
                         {"ts": "2026-01-10T09:00:20Z", "EventID": 4625, "TargetUserName": "alice"},
                         {"ts": "2026-01-10T09:00:41Z", "EventID": 4625, "TargetUserName": "alice"},
                         {"ts": "2026-01-10T09:01:02Z", "EventID": 4624, "TargetUserName": "alice"},
                         {"ts": "2026-01-10T09:02:00Z", "EventID": 4624, "TargetUserName": "bob"},
                         {"ts": "2026-01-10T09:03:10Z", "EventID": 4625, "TargetUserName": "bob"},
                         {"ts": "2026-01-10T09:20:00Z", "EventID": 4634, "TargetUserName": "carol"}],
                        {"field": "ts", "watermark": "1m"})}
    # the example's oracle: 3 failures of alice within 5m, then her logon (bob's logon came before his failure)
    expected = [{"rule": "brute_force", "rule_id": "0f3a2b4c-5d6e-4f70-8a91-b2c3d4e5f610",
                 "rule_title": "Brute Force Against One Account", "rule_level": "high", "rule_tags": TAGS,
                 "correlation_type": "event_count", "group": {"TargetUserName": "alice"},
                 "window_start": "2026-01-10T09:00:00.000Z", "window_end": "2026-01-10T09:05:00.000Z", "value": 3.0,
                 "rules_seen": ["failed_logon"]},
                {"rule": "logon_after_failures", "rule_id": "0f3a2b4c-5d6e-4f70-8a91-b2c3d4e5f611",
                 "rule_title": "Logon After Failed Logons", "rule_level": "critical", "rule_tags": TAGS,
                 "correlation_type": "temporal_ordered", "group": {"TargetUserName": "alice"},
                 "window_start": "2026-01-10T09:00:00.000Z", "window_end": "2026-01-10T09:05:00.000Z", "value": 2.0,
                 "rules_seen": ["failed_logon", "successful_logon"]}]
    stateful = True
    misspelt = "input"


@transform_adapter
class FirstSeen(TransformAdapter):
    """The plugin of tests/fixtures/plugin: registered only with it on the path (test_transform_contract runs the
    suite again in a subprocess that has it)."""

    type = "first_seen"
    module = "etl_test_plugin"
    spec = {"input": "in", "key": "user"}
    sources = {"in": In({"user": "string", "n": "bigint"},
                        [{"user": "ann", "n": 1}, {"user": None, "n": 2}, {"user": "ann", "n": 3},
                         {"user": "bob", "n": 4}])}
    expected = [{"user": "ann", "n": 1}, {"user": "bob", "n": 4}]
    dead = [("first_seen 'first_seen': no key in column 'user'", '{"n":2}', None)]
    stateful = True
    misspelt = "key"

