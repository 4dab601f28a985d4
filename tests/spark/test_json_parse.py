"""etl/jvm/JsonParse.java against Spark's from_json (PERMISSIVE, a corrupt-record column): the same struct for every
hostile value, and the same rows and dead letters through the `parse` transform and the message sources' decoding
with either `parser` engine (etl.compile.json_parse)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from etl.check import check_file
from etl.compile.json_parse import json_struct
from etl.physical import physical_plan, planner_settings

from .helpers import random_timestamp

pytestmark = pytest.mark.spark

HOSTILE = [
    '{"id": 1, "name": "a"}', '  {"id": 2}', "not json {", "[1, 2]", '{"id": "x"}', "", " ", None, "null", "1", '"s"',
    "[]", "{}", '[{"id": 3}]', '[{"id": 3}, {"id": 4}]', '{"id": 1} trailing', '{"id":1}{"id":2}',
    '{"id": 9999999999999999999999}', '{"id": 1.5}', '{"xs": [1, "b", 3]}', '{"xs": [1, null, 3]}', '{"xs": 7}',
    '{"t": "2024-02-30T00:00:00Z"}', '{"t": "2024-02-29T10:11:12.5+02:00"}', '{"day": "2024-02-29"}',
    '{"n": {"a": "q"}}', '{"n": {"a": 4, "z": 1}}', '{"n": [1]}', '{"_etl_corrupt": "x", "id": 5}',
    '{"id": 1, "id": 2}', '{"d": "NaN"}', '{"d": NaN}', '{"d": 1e400}', '{"b": "true"}', '{"b": true}',
    '{"m": {"k": 1, "j": "z"}}', '{"m": {"k": 1}}', '{"dec": 12.345}', '{"dec": 1e30}', '{"name": "\\u00e9\\ud83d\\ude00"}',
    '{"name": "bad \\x escape"}', '{"name": "a"', '{"id": 1,}', "{'id': 1}", '\ufeff{"id": 1}', '{"ID": 3}',
]
SCHEMA = ("id bigint, name string, xs array<int>, t timestamp, day date, n struct<a:int>, d double, b boolean, "
          "m map<string,int>, dec decimal(5,2)")


def _struct(spark):
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    return StructType(list(_parse_datatype_string(SCHEMA).fields) + [StructField("_etl_corrupt", StringType())])


def test_timestamps_parse_as_from_json_parses_them(spark):
    """ISO instants with their zone (converted by IsoInstants.java) and every other text (Spark's parser)."""
    import random

    from pyspark.sql import functions as F

    rng = random.Random(22)
    texts = ['{"t": "2026-01-10T12:00:00Z"}', '{"t": "1969-12-31T23:59:59.5Z"}', '{"t": "2026-01-10 12:00:00"}',
             '{"t": 1700000000}', '{"t": "2026-01-10T12:00:00.1234567Z"}', '{"t": ""}', '{"t": {"a": 1}}',
             '{"t": "2026-01-10T12:00:00z"}', '{"t": "2026-01-10T12:00:00+18:00"}', '[{"t": "2026-01-10T12:00:00Z"}]',
             '{"t": "2026-01-10T12:00:01+01:00", "id": "x"}', *(f'{{"t": "{random_timestamp(rng)}"}}' for _ in range(1500))]
    # 30 tasks of about 50 values: each converts its first 64 here whatever their share of other texts
    df = spark.createDataFrame(list(enumerate(texts)), "i int, v string").repartition(30)
    got = {}
    for engine in ("json-parse-jvm", "from_json"):
        p = json_struct(spark, F.col("v"), _struct(spark), "_etl_corrupt", engine)
        rows = df.select("i", F.unix_micros(p.t).alias("t"), p._etl_corrupt.alias("bad")).collect()
        got[engine] = {r.i: (r.t, r.bad) for r in rows}
    assert got["json-parse-jvm"] == got["from_json"]
    rows = got["from_json"]
    assert rows[0] == (1768046400000000, None) and rows[1] == (-500000, None) and rows[3] == (1700000000000000, None)
    assert rows[7] == (None, '{"t": "2026-01-10T12:00:00z"}') and rows[9] == (None, '[{"t": "2026-01-10T12:00:00Z"}]')
    assert rows[10] == (1768042801000000, '{"t": "2026-01-10T12:00:01+01:00", "id": "x"}')
    assert 500 < sum(bad is None for _, bad in rows.values()) < 1400


def test_the_jvm_parser_gives_from_jsons_struct_for_every_hostile_value(spark):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(i, v) for i, v in enumerate(HOSTILE)], "i int, v string").repartition(2)
    got = {}
    for engine in ("json-parse-jvm", "from_json"):
        p = json_struct(spark, F.col("v"), _struct(spark), "_etl_corrupt", engine)
        got[engine] = {r.i: repr(r.p) for r in df.select("i", p.alias("p")).collect()}  # repr: NaN equals NaN
    assert got["json-parse-jvm"] == got["from_json"]
    rows = got["from_json"]
    # the cases that matter to dead letters: parsed, malformed, a partial row, no value at all
    assert rows[0].startswith("Row(id=1, name='a'") and rows[0].endswith("_etl_corrupt=None)")
    assert rows[2].endswith("_etl_corrupt='not json {')") and rows[19].endswith("""_etl_corrupt='{"xs": [1, "b", 3]}')""")
    assert "n=Row(a=None)" in rows[25] and rows[5] == "None" and rows[7] == "None"


PARSE = """
name: t-parse-json
sources: [{id: src, type: file, path: in, format: jsonl, schema: {k: int, j: string}}]
transforms:
  - {id: pj, type: parse, input: src, field: j, format: json, schema: {%s}, keep_original: false}
sinks: [{id: out, type: file, input: pj, path: out}]
"""


def _parse_run(spark, tmp_path, monkeypatch, engine):
    """The rows and dead letters of HOSTILE through `parse` with `engine` forced, and the engine the build ran."""
    from etl.compile import CompileContext, Compiler
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    from etl import settings

    monkeypatch.setenv("ETL_FORCE_ENGINES", engine)
    settings.reset()  # the second engine of the test: the snapshot is read again
    folder = tmp_path / engine
    (folder / "in").mkdir(parents=True)
    cols = "id: bigint, name: string, xs: 'array<int>', n: 'struct<a:int>', d: double, dec: 'decimal(5,2)'"
    (folder / "p.yaml").write_text(PARSE % cols)
    c = check_file(str(folder / "p.yaml"), programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    assert physical_plan(c.plan, planner_settings(master=spark.sparkContext.master)).engine("pj", "parser") == engine
    inputs = [{"k": k, "j": v} for k, v in enumerate(HOSTILE)]
    res = run_case(c.plan, TestCase(name="hostile", inputs={"src": inputs}), spark)
    assert res.ok, res.message
    out = sorted(repr(sorted(r.items())) for r in res.captured["out"])
    dead = sorted((d["stage"], d["reason"], d["payload"]) for d in res.captured["dead_letter"])
    ctx = CompileContext(spark, c.plan.graph, str(folder / "ck"), plan=c.plan)
    comp = Compiler(ctx)
    from etl.dead_letters import ERR, PAYLOAD

    batch = spark.createDataFrame([(1, '{"id": 1}', None, None)], f"k int, j string, {ERR} string, {PAYLOAD} string")
    comp.evaluate(comp.queries()[0], batch)  # a micro-batch of the source's rows
    return out, dead, ctx.executed[("pj", "parser")]


def test_the_parse_transform_keeps_the_same_rows_and_dead_letters_with_either_parser(spark, tmp_path, monkeypatch):
    jvm_out, jvm_dead, ran = _parse_run(spark, tmp_path, monkeypatch, "json-parse-jvm")
    assert ran == "json-parse-jvm"  # what runs is what explain shows
    ref_out, ref_dead, ran = _parse_run(spark, tmp_path, monkeypatch, "from_json")
    assert ran == "from_json"
    assert jvm_out == ref_out and jvm_dead == ref_dead
    assert len(ref_out) + len(ref_dead) == len(HOSTILE)
    reasons = {p: r for _, r, p in ref_dead}
    assert reasons["not json {"] == reasons['{"xs": [1, "b", 3]}'] == reasons["[1, 2]"] == "malformed json"
    assert reasons[None] == "field 'j' is null" and reasons[""] == "malformed json: not an object"


def test_message_values_decode_to_the_same_rows_and_reasons_with_either_parser(spark):
    from etl.compile.context import ERR, PAYLOAD
    from etl.components.sources.kafka import build as kafka
    from etl.components.sources.kafka.spec import KafkaSource

    schema = dict(part.split(" ", 1) for part in SCHEMA.split(", "))
    spec = KafkaSource.model_validate({"id": "k", "type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topics": ["t"],
                                       "format": "json", "schema": schema})
    node = SimpleNamespace(id="k", spec=spec, span="p.yaml:3:5")

    df = spark.createDataFrame([(i, None if v is None else v.encode()) for i, v in enumerate(HOSTILE)],
                               "i int, value binary").repartition(2)
    got = {}
    for parser in ("json-parse-jvm", "from_json"):
        out = kafka.decode(df, spec, node, "p", parser)
        got[parser] = sorted(repr(r) for r in out.select(*schema, ERR, PAYLOAD).collect())
    assert got["json-parse-jvm"] == got["from_json"]
    reasons = sorted(r.split(f"{ERR}=", 1)[1].split(", " + PAYLOAD)[0] for r in got["from_json"])
    by_reason = Counter(r.split(" (")[0].strip("'") for r in reasons)
    assert by_reason == {"None": 20, "json does not match the declared schema": 11, "json value is not an object": 7,
                         "malformed json": 5, "empty message value": 2, "null message value": 1}
