"""The JVM lookup (etl/jvm/LookupTables.java) gives exactly what the Python workers' lookup gives: same hash,
same rows for every column type, NULLs, duplicate keys and multi-column keys; and it steps aside (to the
Python workers) when it cannot hold a table."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from etl import settings
from etl.compile.lookups import store as ls
from etl.compile.keyhash import key_hashes
from etl.compile.lookups.dimension import Dimension, lookup_join
from etl.components.transforms.lookup.spec import LookupTransform
from tests.lookup.reference import ref_join

pytestmark = pytest.mark.spark

UTC = dt.UTC
TYPES = pa.schema([
    ("id", pa.string()), ("region", pa.string()), ("name", pa.string()), ("big", pa.int64()),
    ("num", pa.int32()), ("small", pa.int16()), ("tiny", pa.int8()), ("score", pa.float64()),
    ("ratio", pa.float32()), ("ok", pa.bool_()), ("day", pa.date32()), ("seen", pa.timestamp("us", tz="UTC")),
    ("price", pa.decimal128(10, 2)),
])
ROWS = [
    {"id": "u1", "region": "eu", "name": "Ann", "big": 1 << 40, "num": -7, "small": 300, "tiny": -3,
     "score": 1.5, "ratio": 0.25, "ok": True, "day": dt.date(2026, 1, 2),
     "seen": dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "price": decimal.Decimal("12.34")},
    {"id": "u2", "region": "eu", "name": "", "big": None, "num": None, "small": None, "tiny": None, "score": None,
     "ratio": None, "ok": None, "day": None, "seen": None, "price": None},
    {"id": "u3", "region": "us", "name": None, "big": -1, "num": 0, "small": -1, "tiny": 127, "score": -0.0,
     "ratio": -1.5, "ok": False, "day": dt.date(1970, 1, 1), "seen": dt.datetime(1970, 1, 1, tzinfo=UTC),
     "price": decimal.Decimal("-0.01")},
    {"id": "ünï", "region": "eu", "name": "naïve ✓ " * 30, "big": 5, "num": 5, "small": 5, "tiny": 5, "score": 5.0,
     "ratio": 5.0, "ok": True, "day": dt.date(2030, 12, 31), "seen": dt.datetime(2030, 12, 31, tzinfo=UTC),
     "price": decimal.Decimal("99999999.99")},
    {"id": "dup", "region": "eu", "name": "first", "big": 1, "num": 1, "small": 1, "tiny": 1, "score": 1.0,
     "ratio": 1.0, "ok": True, "day": dt.date(2026, 1, 1), "seen": None, "price": decimal.Decimal("1.00")},
    {"id": "dup", "region": "eu", "name": "second", "big": 2, "num": 2, "small": 2, "tiny": 2, "score": 2.0,
     "ratio": 2.0, "ok": False, "day": dt.date(2026, 1, 2), "seen": None, "price": decimal.Decimal("2.00")},
    {"id": "dup", "region": "us", "name": "other region", "big": 3, "num": 3, "small": 3, "tiny": 3, "score": 3.0,
     "ratio": 3.0, "ok": None, "day": None, "seen": None, "price": None},
    {"id": None, "region": "eu", "name": "no key", "big": 0, "num": 0, "small": 0, "tiny": 0, "score": 0.0,
     "ratio": 0.0, "ok": False, "day": None, "seen": None, "price": None},
]
VALUES = [f.name for f in TYPES if f.name not in ("id", "region")]
EVENT_KEYS = ["u1", "u2", "u3", "ünï", "dup", "missing", None, "u1", ""]


def table(tmp_path, rows=ROWS):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "dim.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=TYPES), path)
    return Dimension("dim", str(path), "parquet")


def events(spark, keys=EVENT_KEYS, region="eu"):
    return spark.createDataFrame([(k, i, region) for i, k in enumerate(keys)], "user string, n bigint, region string")


def spec(on, how, refresh=None) -> LookupTransform:
    return LookupTransform.model_validate({"id": "enrich", "type": "lookup", "inputs": ["ev"], "table": "dim",
                                           "on": on, "how": how, "store": "rocksdb", "fields": VALUES,
                                           **({"refresh": refresh} if refresh else {})})


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def canon(rows: list[dict]) -> list[str]:
    def val(v):
        if isinstance(v, float) and v == 0:
            return 0.0  # -0.0 and 0.0 print alike in JSON only if normalized
        if isinstance(v, dt.datetime) and v.tzinfo is not None:  # collect() gives naive UTC (session time zone)
            v = v.astimezone(UTC).replace(tzinfo=None)
        if isinstance(v, (dt.date, dt.datetime, decimal.Decimal)):
            return str(v)
        return v

    return sorted(json.dumps({k: val(v) for k, v in r.items()}, sort_keys=True, ensure_ascii=False) for r in rows)


def joined(spark, tmp_path, monkeypatch, on, how, jvm: bool, keys=EVENT_KEYS, refresh=None):
    monkeypatch.setenv("ETL_LOOKUP_JVM", "on" if jvm else "off")
    settings.reset()  # the snapshot is read once per process: read the switch again
    ls.drop_cached()
    res = lookup_join(events(spark, keys), table(tmp_path), spec(on, how, refresh),
                      base_dir=str(tmp_path / ("jvm" if jvm else "py")))
    res.prepare()
    assert ("LookupTables" in plan_of(res.df)) == jvm
    return [r.asDict() for r in res.df.collect()], res


def test_the_java_hash_is_the_stores_hash(spark):
    rnd = random.Random(3)
    keys = ["", "a", "abcdefg", "abcdefgh", "abcdefghi", "ünïcödé", "\x1f", "x" * 64, "0", "12345678901"]
    keys += ["".join(rnd.choice("ab\x00é€😀0123456789") for _ in range(rnd.randrange(0, 30))) for _ in range(300)]
    want = key_hashes(pa.array(keys)).tolist()
    jt = spark._jvm.etl.jvm.LookupTables
    got = [jt.keyHash(bytearray(k.encode())) % (1 << 64) for k in keys]
    assert got == want


@pytest.mark.parametrize("how", ["inner", "left"])
def test_jvm_and_python_lookups_give_the_same_rows(spark, tmp_path, monkeypatch, how):
    on = {"user": "id"}
    got, _ = joined(spark, tmp_path, monkeypatch, on, how, jvm=True)
    want, _ = joined(spark, tmp_path, monkeypatch, on, how, jvm=False)
    assert canon(got) == canon(want)
    flat = [{"user": k, "n": i, "region": "eu"} for i, k in enumerate(EVENT_KEYS)]
    renamed = {c: c for c in VALUES}
    assert canon(got) == canon(ref_join(flat, ROWS, on, VALUES, how == "inner", renamed))
    dups = sorted(r["name"] for r in got if r["user"] == "dup")
    assert dups == ["first", "other region", "second"]  # every row of a key, once
    assert len(got) == (8 if how == "inner" else 11)


def test_multi_column_keys_and_a_unique_table(spark, tmp_path, monkeypatch):
    """Keys of two columns (joined by \\x1f on both sides); a table without duplicate (id, region) keys
    is served as one struct per event."""
    on = {"user": "id", "region": "region"}
    got, _ = joined(spark, tmp_path, monkeypatch, on, "left", jvm=True)
    want, _ = joined(spark, tmp_path, monkeypatch, on, "left", jvm=False)
    assert canon(got) == canon(want)
    assert sorted(r["name"] for r in got if r["user"] == "dup") == ["first", "second"]  # region eu only
    unique = [r for r in ROWS if r["id"] != "dup"]
    monkeypatch.setenv("ETL_LOOKUP_JVM", "on")
    settings.reset()
    res = lookup_join(events(spark), table(tmp_path / "unique", unique), spec({"user": "id"}, "left"),
                      base_dir=str(tmp_path / "unique-stores"))
    assert "LookupTables.one" in plan_of(res.df)
    rows = [r.asDict() for r in res.df.collect()]
    assert len(rows) == len(EVENT_KEYS)
    assert {r["user"]: r["name"] for r in rows if r["user"] in ("u1", "ünï")} == {"u1": "Ann", "ünï": "naïve ✓ " * 30}


def test_a_key_type_whose_text_differs_runs_in_python(spark, tmp_path, monkeypatch):
    """A double key's text is '1.0' in Spark and '1' in Arrow: that lookup stays in the Python workers."""
    monkeypatch.setenv("ETL_LOOKUP_JVM", "on")
    settings.reset()
    ev = spark.createDataFrame([(1.0,), (2.5,)], "user double")
    res = lookup_join(ev, table(tmp_path), spec({"user": "id"}, "left"), base_dir=str(tmp_path / "s"))
    assert "LookupTables" not in plan_of(res.df)
    assert res.df.count() == 2


def test_a_table_too_large_for_the_heap_is_refused_before_loading(spark, tmp_path):
    src = ls.TableSource("dim", table(tmp_path).path, "parquet", ("id",), tuple(VALUES), TYPES,
                         base_dir=str(tmp_path / "s"))
    dest = ls.ensure_version(src, ls.source_version(src))
    rows = json.loads((dest / "meta.json").read_text())["rows"]
    assert rows == 7  # the NULL key is not stored
    jt = spark._jvm.etl.jvm.LookupTables
    h = jt.handle(str(tmp_path / "huge"))
    with pytest.raises(Exception, match="spark.driver.memory"):
        jt.publish(h, str(dest), rows, 1 << 50)
    assert jt.version(h) is None
    jt.publish(h, str(dest), rows, 1000)
    assert jt.version(h) == str(dest)
