"""The columns of a jsonl/csv file source without `schema`, inferred at validate from a bounded sample (etl.load.infer).

The expected columns of tests/fixtures/infer are what Spark 4.3's own inference gives for the same files
(tests/spark/test_infer_schema_spark.py compares them with spark.read.json / .csv): the fast lane pins them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from etl import settings
from etl.check import check_file
from etl.load.infer import infer_columns

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "fixtures" / "infer"

JSONL = {  # fields sorted by name (Java's String order), as Spark's inference sorts them
    "B": "boolean", "Z": "string", "_u": "bigint", "big": "decimal(20,0)", "bigger": "double", "cr": "bigint",
    "crlf": "boolean", "dd": "decimal(19,0)", "dd2": "double", "dec": "decimal(24,0)", "dec2": "bigint",
    "e": "string", "ex": "double", "id": "bigint", "last": "string", "lst": "array<array<double>>",
    "mix": "array<string>", "n": "string", "name": "string", "nan": "double", "tags": "array<string>",
    "user": "struct<age:double,geo:struct<country:string>,zz:array<double>>", "when": "string", "x": "double",
    "é": "bigint"}
CSV = {"id": "int", "price": "double", "name": "string", "_c3": "string", "flag": "boolean", "day": "string",
       "ts": "timestamp", "tsz": "timestamp", "big": "double", "Dup9": "string", "dup10": "string", "sp": "double",
       "exp": "double", "t": "timestamp"}
CSV_TYPES = {"d": "date", "mixed": "timestamp", "grow": "decimal(20,0)", "dec": "decimal(23,0)", "bool": "boolean",
             "hexd": "double", "ntz": "timestamp", "late": "string"}


@pytest.fixture
def bounds(monkeypatch):
    def set_(**values: int) -> None:
        for name, value in values.items():
            monkeypatch.setenv(f"ETL_INFER_{name.upper()}", str(value))
        settings.reset()
    yield set_
    monkeypatch.undo()
    settings.reset()


def test_jsonl_as_spark_infers_it():
    """Mixed long/double, decimals past bigint, null-only and empty-string columns, empty objects and arrays of
    them dropped, a top-level array read as rows, a scalar line, a malformed line, blank lines, CR and CRLF line
    ends, a last line without one; `_skipped.jsonl` left out (Spark skips names starting with _ or .)."""
    sample = infer_columns("jsonl", str(SAMPLES), "jsonl")
    assert sample.columns == JSONL and list(sample.columns) == list(JSONL)
    assert (sample.files, sample.lines, sample.cut, sample.skipped) == (3, 14, False, "")


@pytest.mark.parametrize("folder,delimiter,expected", [("csv", ",", CSV), ("csv_types", ";", CSV_TYPES)])
def test_csv_as_spark_infers_it(folder, delimiter, expected):
    """Empty and duplicate header names, the header line repeated, quoted delimiters, a short row, spaces before a
    number (a double), int -> bigint -> decimal(p,0) -> double, 1.5e1 a decimal, hex and 1d doubles, yyyy-MM-dd
    dates, timestamps with and without a zone, a date and a timestamp in one column (a timestamp)."""
    sample = infer_columns(folder, str(SAMPLES), "csv", True, delimiter)
    assert sample.columns == expected and list(sample.columns) == list(expected)


def test_csv_without_header_names_columns_by_position(tmp_path):
    (tmp_path / "a.csv").write_text("1,x,2024-01-01\n2,,2024-01-02\n")
    assert infer_columns("a.csv", str(tmp_path), "csv", header=False).columns == \
        {"_c0": "int", "_c1": "string", "_c2": "date"}


def test_the_sample_is_bounded(tmp_path, bounds):
    (tmp_path / "a.jsonl").write_text('{"a": 1}\n{"b": 2}\n{"c": 3}\n')
    (tmp_path / "b.jsonl").write_text('{"d": 4}\n')
    bounds(lines=2)
    sample = infer_columns(".", str(tmp_path), "jsonl")
    assert (sample.columns, sample.files, sample.lines, sample.cut) == ({"a": "bigint", "b": "bigint",
                                                                         "d": "bigint"}, 2, 3, True)
    assert sample.text((16, 2, 1024)) == "schema inferred from 2 files, 3 lines (a sample: at most 16 files, 2 lines " \
        "and 1,024 KB of each)"
    bounds(lines=1000, files=1)
    assert infer_columns(".", str(tmp_path), "jsonl").columns == {"a": "bigint", "b": "bigint", "c": "bigint"}
    bounds(files=16, kb=1)
    (tmp_path / "a.jsonl").write_text('{"a": 1}\n' + '{"long": "' + "x" * 2000 + '"}\n')
    (tmp_path / "b.jsonl").unlink()
    sample = infer_columns(".", str(tmp_path), "jsonl")  # the line cut at 1 KB is left out, not read as malformed
    assert (sample.columns, sample.lines, sample.cut) == ({"a": "bigint"}, 1, True)


def _pipeline(tmp_path: Path, source: str, use: str = "x") -> Path:
    p = tmp_path / "p.yaml"
    p.write_text(f"name: p\nsources:\n  - {source}\ntransforms:\n  - {{id: f, type: filter, input: s, expr: \"{use} > 1\"}}\n"
                 "sinks:\n  - {id: o, type: print, input: f}\n")
    return p


@pytest.mark.parametrize("data,source,why", [
    (None, "{id: s, type: file, path: data/none.jsonl}", "data file 'data/none.jsonl' does not exist"),
    (None, "{id: s, type: file, path: 'hdfs://nn/logs'}", "hdfs:// files are not read at validate"),
    (("a.jsonl.gz", b"\x1f\x8b"), "{id: s, type: file, path: data}", "data/a.jsonl.gz is compressed"),
    (("a.jsonl", b'{"user.name": 1}\n'), "{id: s, type: file, path: data}", "column 'user.name' has a dot"),
    (("a.jsonl", b'{"a": 1, "A": 2}\n'), "{id: s, type: file, path: data}", "columns 'A' and 'a' differ only in case"),
    (("a.jsonl", b'{"a": 1, "b": {"c": 1, "c": 2}}\n'), "{id: s, type: file, path: data}",
     "a sampled object has the key 'c' twice"),
    (("a.jsonl", b'{"_etl_x": 1}\n'), "{id: s, type: file, path: data}", "column '_etl_x' is named like etl's own columns"),
    (("a.jsonl", b"5\nnot json\n"), "{id: s, type: file, path: data}", "the sample has no rows"),
    (("a.jsonl", b'{"a": 1}\n{\'b\': 2}\n'), "{id: s, type: file, path: data}",
     "a sampled line is JSON with single quotes, which Spark reads and etl's sample does not"),
    (None, "{id: s, type: file, path: /etc/passwd}", "data file '/etc/passwd' is outside the pipeline's folder"),
])
def test_no_columns_inferred_is_one_warning_at_the_path(tmp_path, data, source, why):
    (tmp_path / "data").mkdir()
    if data is not None:
        (tmp_path / "data" / data[0]).write_bytes(data[1])
    checked = check_file(str(_pipeline(tmp_path, source, use="anything")))
    got = [(d.code, d.span.line, d.span.col) for d in checked.report.sorted()]
    assert got == [("W313", 3, source.index("path: ") + 11)], [d.render() for d in checked.report.sorted()]
    (d,) = checked.report.diagnostics
    assert d.message == f"columns of file source 's' not inferred: {why}; the column checks of the components it " \
        "feeds are skipped"
    assert checked.plan is not None and checked.plan.graph.inferred == {}


def test_explain_says_how_the_columns_were_inferred(tmp_path):
    from etl.plan.explain import explain_plan

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"x": 2, "host": "a"}\n\n{"x": 2.5}\n')
    checked = check_file(str(_pipeline(tmp_path, "{id: s, type: file, path: data}")))
    assert not checked.report.diagnostics
    text = explain_plan(checked.plan)
    assert "  s (file)\n    schema inferred from 1 file, 3 lines (all of them); etl run reads the files with these " \
        "columns\n    columns: host:string, x:double\n" in text


def test_csv_header_is_the_largest_files_first_line(tmp_path):
    """As Spark: the header is the first line of its first partition, the largest file's; the other file's header
    line is a row (checked against spark.read.csv: p and q are strings, r an int)."""
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    (tmp_path / "b.csv").write_text("p,q,r\n1,2,3\n4,5,6\n7,8,9\n")
    assert infer_columns(".", str(tmp_path), "csv").columns == {"p": "string", "q": "string", "r": "int"}


def test_csv_backslash_outside_quotes_is_the_fields_own(tmp_path):
    """As Spark's reader (checked: b = 'x\\', c an int): the backslash escapes only inside quotes."""
    (tmp_path / "a.csv").write_text('a,b,c\n1,x\\,2\n3,"y\\"z",4\n')
    assert infer_columns("a.csv", str(tmp_path), "csv").columns == {"a": "int", "b": "string", "c": "int"}
