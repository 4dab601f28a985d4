"""No SQL construct validates and then fails at run on clean data (issue 37): every script of pipelines/sql/ that
`etl validate` accepts RUNS in the session-wide Spark. The scripts whose tests blocks other Spark tests run
(ELSEWHERE: exact rows there) are not run twice; each other script runs here as `etl test` runs a case (its
sources fed, its sinks captured whatever their connector: no server is asked) over three generated rows of
each source's declared columns, in one micro-batch: no E400 (compile) or E401 (run) failure, no dead letter.

A dimension table read from MySQL is read from a CSV file of generated rows instead (the servers tests,
tests/integration/test_sql_servers.py, read MySQL itself): everything else of the plan is the script's.
"""
from __future__ import annotations

import re
import shutil
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from etl.check import check_file
from tests.sql.test_sql_spark import EXAMPLE_SCRIPTS

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "pipelines" / "sql").glob("*.sql"))
ENV = {"ROCKETMQ_NAMESRV": "127.0.0.1:9876"}
# script -> the test running its tests block
ELSEWHERE = {**{name: "test_sql_spark.py::test_example_scripts_pass_their_tests" for name in EXAMPLE_SCRIPTS},
             "functions": "test_python_functions_spark.py::test_example_functions_pass_their_tests",
             "grok": "test_sql_grok_spark.py::test_grok_twins_write_the_same_rows"}
# a source read as text (rsqldb's isJsonData = 'false'): lines its fieldDelimiter splits into the table's columns
TEXT = {("connectors", "rmq_orders"): [{"value": f"o{i}|u{i % 2}|{25.5 * (i + 1)}", "tag": "paid"} for i in range(3)]}
# a MySQL dimension table (rsqldb's type = 'db'): its columns and WITH clause
_DB_TABLE = re.compile(r"(CREATE TABLE (\w+) \(([^;]*?)\)\s*WITH\s*\()\s*type = 'db',[^;]*?\)(;)", re.S | re.I)


def _value(dtype: Any, name: str, i: int) -> Any:
    """Row i's value of a column: clean, of its type (text of letters: two rows share a key)."""
    from pyspark.sql import types as T

    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return f"2026-01-10T09:{10 * i:02d}:00Z"  # 10 minutes apart: the watermark closes the first windows
    if isinstance(dtype, T.DateType):
        return f"2026-01-{10 + i}"
    if isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return i + 1
    if isinstance(dtype, (T.DoubleType, T.FloatType)):
        return 25.5 * (i + 1)
    if isinstance(dtype, T.DecimalType):
        return Decimal(i + 1)
    if isinstance(dtype, T.BooleanType):
        return i % 2 == 0
    if isinstance(dtype, T.ArrayType):
        return [_value(dtype.elementType, name, i)]
    if isinstance(dtype, T.MapType):
        return {_value(dtype.keyType, name, i): _value(dtype.valueType, name, i)}
    if isinstance(dtype, T.StructType):
        return {f.name: _value(f.dataType, f.name, i) for f in dtype.fields}
    return f"{name}-{'ab'[i % 2]}"


def _generated(spark: Any, ddl: str, n: int = 3) -> list[dict]:
    schema = spark.createDataFrame([], ddl).schema
    return [{f.name: _value(f.dataType, f.name, i) for f in schema.fields} for i in range(n)]


def _with_file_dimensions(text: str, folder: Path) -> str:
    """The script with each MySQL dimension table read from a CSV file (in `folder`) of two generated rows."""
    def swap(m: re.Match) -> str:
        cols = [c.strip().split()[0].strip("`") for c in m.group(3).split(",")
                if c.strip() and not c.strip().upper().startswith("PRIMARY")]
        (folder / f"{m.group(2)}.csv").write_text(
            ",".join(cols) + "\n" + "".join(",".join(_value(None, c, i) for c in cols) + "\n" for i in range(2)))
        return f"{m.group(1)}type = 'file', filePath = '{m.group(2)}.csv', format = 'csv', header = 'true'){m.group(4)}"

    return _DB_TABLE.sub(swap, text)


def test_every_sql_fixture_that_validates_runs_on_clean_data(spark, tmp_path):
    from etl.runtime.testing import run_case, source_ddl
    from etl.spec.pipeline import TestCase

    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")  # the scripts' data and Python modules
    folder = tmp_path / "pipelines" / "sql"
    ran, failures, seconds = [], [], {}
    for script in SCRIPTS:
        path = folder / script.name
        path.write_text(_with_file_dimensions(script.read_text(), folder))
        if script.stem in ELSEWHERE:  # its tests block runs there
            assert script.with_suffix(".tests.yaml").is_file(), script.name
            continue
        c = check_file(path, environ=ENV, programs=True)
        if c.plan is None:
            continue
        graph = c.plan.graph
        inputs = {n.id: TEXT.get((script.stem, n.id)) or _generated(spark, source_ddl(graph, n, []))
                  for n in graph.of_kind("source")}
        t0 = time.monotonic()
        res = run_case(c.plan, TestCase(name="clean", inputs=inputs), spark, str(path))
        seconds[script.stem] = round(time.monotonic() - t0, 1)
        ran.append(script.stem)
        if not res.ok:
            failures.append(f"{script.name}: {res.message.splitlines()[0] if res.message else 'failed'}")
        elif res.captured.get("dead_letter"):
            failures.append(f"{script.name}: dead letters on clean data: {res.captured['dead_letter'][:2]}")
        elif not any(rows for sink, rows in res.captured.items() if sink != "dead_letter"):
            failures.append(f"{script.name}: no sink wrote a row")
    print("seconds per script:", seconds)
    assert not failures, "\n".join(failures)
    # every fixture validates (test_sql_twins), so every one ran here or runs its tests block elsewhere
    assert ran == ["connectors", "join_lookup", "kafka_mysql", "rocketmq_es", "rsqldb_style", "windows"], ran
    assert sorted(ran + list(ELSEWHERE)) == [p.stem for p in SCRIPTS]
