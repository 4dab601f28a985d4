"""Table-driven: every invalid fixture yields exactly these diagnostics (code, line, col[, file]).

Fixtures live in tests/fixtures/invalid/; rule files they reference in
tests/fixtures/invalid/rules/. Positions are 1-based. Warnings are listed too:
the table is the complete output of `etl validate` for the file.
"""
import os
from pathlib import Path

import pytest

from etl.check import check_file

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "invalid"

EXPECTED = {
    'bad_duration': [('E102', 12, 11)],
    # the state engine's accumulators keep top-level simple types (the native window counts a binary column)
    'state_engine_field_types': [('E404', 16, 28), ('E404', 32, 35)],
    'bad_id': [('W204', 3, 5), ('E102', 3, 9), ('E201', 7, 35)],
    'bad_literal': [('E102', 6, 13)],
    'bad_size': [('E102', 8, 17)],
    'cidr_invalid': [('E102', 10, 47), ('E310', 12, 23)],
    'cycle': [('E202', 6, 5)],
    'dead_letter_bad': [('E103', 7, 9)],
    'dedupe_no_event_time': [('E321', 7, 5), ('E310', 7, 56)],
    'derive_unknown_column': [('E310', 11, 12)],
    'unknown_function': [('E012', 11, 11), ('E012', 12, 11), ('E012', 14, 44)],
    'rule_value_types': [('E102', 11, 46), ('E102', 13, 54), ('E102', 14, 42)],
    'nested_field_typo': [('E310', 15, 32), ('E310', 21, 20), ('E310', 22, 12)],
    'duplicate_outputs': [('E104', 8, 5), ('E104', 13, 5)],
    'duplicate_id': [('E200', 5, 10)],
    'duplicate_keys': [('E001', 7, 5), ('E001', 13, 5)],
    'duplicate_rule_id': [('E303', 2, 9, 'rules/dupe_ids.yaml')],
    'empty_lists': [('E102', 2, 10), ('E102', 3, 1)],
    'env_unset': [('E004', 5, 33)],
    'event_time_string': [('E322', 8, 25), ('E310', 14, 25), ('W312', 16, 35), ('W312', 16, 38)],
    'grok_capture_clashes': [('W304', 9, 31), ('E302', 14, 14)],
    'grok_custom_bad': [('E302', 9, 14)],
    'grok_unknown_field': [('E310', 8, 12)],
    'grok_unknown_pattern': [('E302', 9, 17)],
    'input_and_inputs': [('E100', 7, 5)],
    'inferred_columns': [('E322', 4, 77), ('W313', 6, 36), ('W313', 7, 35), ('E310', 13, 34), ('E102', 14, 46),
                         ('E310', 15, 33), ('E310', 16, 60)],
    'join_no_event_time': [('E321', 13, 22)],
    'join_one_input': [('E104', 8, 5)],
    'join_bounds_condition': [('W206', 6, 5), ('E102', 6, 70), ('W206', 7, 5), ('E102', 7, 71), ('E310', 8, 89),
                              ('E311', 9, 77), ('W206', 10, 5), ('E102', 10, 56)],
    'join_unknown_key': [('E310', 12, 53)],
    'kafka_pattern_regex': [('E300', 6, 14)],
    'kafka_topics_and_pattern': [('E104', 3, 5)],
    'lookup_not_static': [('W204', 4, 5), ('E203', 6, 56)],
    'lookup_unknown_columns': [('E310', 15, 10), ('E310', 15, 19), ('E310', 16, 20)],
    'many_errors': [('E102', 7, 28), ('W204', 8, 5), ('E103', 20, 11), ('W206', 22, 5), ('E205', 27, 35), ('E102', 28, 50)],
    'missing_required': [('E101', 5, 5)],
    'missing_type': [('E101', 3, 5)],
    'no_inputs': [('E201', 5, 5), ('W206', 5, 5)],
    'not_a_mapping': [('E102', 1, 1)],
    'parquet_no_schema': [('E104', 3, 5)],
    'parse_and_route_columns': [('E310', 8, 12), ('E310', 15, 16)],
    'predicate_ops': [('E104', 10, 15), ('E104', 12, 15)],
    'reads_sink': [('E203', 5, 34)],
    'regex_bad': [('E300', 12, 41)],
    'regex_bad_rule_file': [('E300', 6, 33, 'rules/bad_regex.yaml')],
    'route_labels': [('W206', 5, 5), ('E205', 12, 33), ('E205', 13, 33)],
    'rule_file_invalid': [('E100', 2, 22, 'rules/invalid_rule.yaml'), ('E101', 3, 3, 'rules/invalid_rule.yaml'),
                          ('E101', 5, 14, 'rules/invalid_rule.yaml')],
    'rule_condition_outside_when': [('E101', 9, 20), ('E101', 10, 22), ('E100', 10, 36)],
    'mysql_jdbc_url': [('E100', 8, 5)],
    'rule_file_missing': [('E006', 9, 9), ('E006', 10, 9)],
    'rule_file_template': [('E003', 5, 38, 'rules/templated.yaml')],
    'rule_node_invalid': [('E104', 10, 15)],
    'schema_types': [('E102', 7, 18), ('E102', 7, 41), ('E102', 14, 42)],
    'select_unknown_columns': [('E310', 10, 20), ('E310', 11, 14), ('E310', 12, 15)],
    'shared_output': [('E330', 6, 5), ('E330', 8, 3)],
    'sink_key_expr': [('E311', 10, 26), ('E310', 11, 19)],
    'spark_casts': [('E102', 13, 16), ('E102', 14, 16), ('E102', 15, 12), ('E102', 16, 20), ('E102', 17, 69),
                    ('E102', 18, 16)],
    'spark_call_signatures': [('E012', 13, 14), ('E102', 14, 26), ('E102', 15, 20), ('E102', 16, 28), ('E012', 22, 12),
                              ('E012', 22, 34), ('E102', 24, 44)],
    'sliding_no_slide': [('E104', 8, 5)],
    'sql_parse_error': [('E311', 10, 20)],
    'static_as_input': [('W204', 3, 5), ('E203', 10, 35)],
    'tab_indent': [('E001', 3, 1)],
    'template_syntax': [('E002', 5, 26)],
    'template_undefined': [('E003', 7, 34)],
    'tests_block': [('E207', 9, 7), ('E207', 11, 7)],
    'tests_batches': [('E207', 9, 18), ('E207', 10, 18), ('E102', 11, 20), ('E102', 13, 18)],
    'tests_batches_shape': [('E104', 7, 5), ('E100', 11, 38)],
    'trigger_and_checkpoint': [('E102', 6, 17), ('E102', 6, 38), ('E100', 7, 28)],
    'union_mismatch': [('W312', 6, 35), ('W312', 6, 38), ('E310', 7, 44)],
    'unknown_column_expr': [('E310', 10, 12)],
    'unknown_component_key': [('E100', 6, 5)],
    'unknown_input': [('W204', 3, 5), ('E201', 7, 12), ('E201', 10, 45)],
    'unknown_top_key': [('E101', 1, 1), ('W204', 3, 5), ('E100', 4, 1)],
    'unknown_types': [('E103', 4, 11), ('E103', 9, 11), ('E103', 14, 11)],
    'window_no_event_time': [('E320', 12, 11)],
    'window_shape': [('E104', 13, 18)],
    'window_aggregate_type': [('E102', 17, 26)],
    'window_unknown_columns': [('E310', 13, 16), ('E310', 15, 26), ('E310', 17, 25)],
    'yaml_syntax': [('E001', 5, 12)],
}

# (fixture, code, text that must appear in the message or the hint)
MESSAGES = [
    ("unknown_component_key", "E100", "did you mean 'count'?"),
    ("unknown_top_key", "E100", "did you mean 'sinks'?"),
    ("unknown_types", "E103", "did you mean 'kafka'?"),
    ("unknown_types", "E103", "did you mean 'filter'?"),
    ("unknown_types", "E103", "did you mean 'elasticsearch'?"),
    ("unknown_input", "E201", "did you mean 'access'?"),
    ("unknown_input", "E201", "did you mean 'errors'?"),
    ("route_labels", "E205", "did you mean 'errors'?"),
    ("grok_unknown_pattern", "E302", "did you mean 'IPV4' or 'IPV6'?"),
    ("unknown_column_expr", "E310", "did you mean 'status'?"),
    ("derive_unknown_column", "E310", "did you mean 'bytes'?"),
    ("inferred_columns", "E310", "unknown column 'nmae' in rule 'typo' of filter 'f' | did you mean 'name'?"),
    ("inferred_columns", "E310", "unknown column 'prise' in transform 'd' (columns.total) | did you mean 'price'?"),
    ("inferred_columns", "E102", "value 'five-hundred' of rule 'text' of filter 'f' is not a number: field 'status' "
     "is bigint"),
    ("inferred_columns", "W313", "columns of file source 'remote' not inferred: s3a:// files are not read at validate;"
     " the column checks of the components it feeds are skipped | declare `schema: {column: type}`"),
    ("inferred_columns", "W313", "columns of file source 'later' not inferred: no file matches data/later/*.jsonl yet"),
    ("unknown_function", "E012", "unknown SQL function 'to_timestmp' in transform 'd' (columns.t) | did you mean "
     "'to_timestamp'?"),
    ("unknown_function", "E012", "unknown SQL function 'week' in transform 'd' (columns.w) | did you mean 'weekday'?"),
    ("spark_call_signatures", "E012", "substring takes 2 or 3 arguments, got 4 in transform 'd' (columns.part)"),
    ("spark_call_signatures", "E102", "argument 2 of date_add, 'x', is not a number: Spark casts it to int and fails "
     "the query on it (ANSI mode)"),
    ("spark_call_signatures", "E102", "argument 1 of upper is array<string>: Spark takes string, int, bigint, double, "
     "decimal, boolean, date, timestamp, binary there (transform 'd' (columns.loud)) | convert it, e.g. CAST(... AS "
     "string)"),
    ("spark_call_signatures", "E102", "argument 2 of date_add is bigint: Spark takes string, int there (transform 'd' "
     "(columns.later)) | convert it, e.g. CAST(... AS int)"),
    ("spark_call_signatures", "E012", "coalesce takes 1 or more arguments, got 0 in transform 'f' (expr)"),
    ("window_aggregate_type", "E102", "aggregate sum of transform 'w' reads a column of array<string>: Spark's try_sum "
     "takes string, int, bigint, double, decimal, timestamp | sum a number column"),
    ("spark_casts", "E102", "CAST of string to array<int> is a cast Spark refuses (DATATYPE_MISMATCH at run) "
     "(transform 'd' (columns.a)) | Spark's CAST turns string into string, boolean, tinyint, smallint, int, bigint, "
     "float, double, decimal, date, timestamp, timestamp_ntz, binary, interval year to month, interval month, "
     "interval day to second, interval day, variant only; to read text as array<int>, use from_json(..., "
     "'array<int>')"),
    ("spark_casts", "E102", "TRY_CAST of date to int is a cast Spark refuses (DATATYPE_MISMATCH at run) (transform "
     "'d' (columns.e)) | Spark's TRY_CAST turns date into string, date, timestamp, timestamp_ntz, variant only"),
    ("spark_casts", "E102", "CAST of struct<a:bigint,b:string> to struct<a: bigint> is a cast Spark refuses "
     "(DATATYPE_MISMATCH at run) (transform 'd' (columns.g)) | Spark casts a struct to a struct of as many fields, "
     "each field to the one in its place"),
    ("spark_call_signatures", "E012", "lower takes 1 argument, got 2 in transform 'f' (expr)"),
    ("spark_call_signatures", "E102", "value 'close' of rule 'near' of filter 'f' is not a number: field 'dist' is "
     "int"),
    ("rule_value_types", "E102", "value 'five-hundred' of rule 'five' of filter 'f' is not a number: field 'status' "
     "is bigint | compare status with a bigint value (a number, not text)"),
    ("rule_value_types", "E102", "value 'yesterday' of rule 'when' of filter 'f' is not a timestamp Spark can read "
     "(e.g. '2024-05-01T12:00:00Z' or '2024-05-01'): field 'ts' is timestamp"),
    ("nested_field_typo", "E310", "unknown field 'user.geo.contry' in rule 'fr' of filter 'f': no field 'contry' in "
     "struct 'user.geo' | did you mean 'country'?"),
    ("nested_field_typo", "E310", "unknown field 'bytes.kb' in transform 'd' (columns.kb): 'bytes' is int: it has no "
     "field 'kb'"),
    ("window_unknown_columns", "E310", "did you mean 'avg_latency'?"),
    ("template_undefined", "E003", "did you mean 'topic'?"),
    ("rule_file_template", "E003", "did you mean 'host'?"),
    ("rule_file_invalid", "E100", "did you mean 'regex'?"),
    ("rule_file_invalid", "E101", "missing required key 'when' in rule 'flat': the condition (field, contains) goes "
     "under `when` | write `when: {field: cmd, contains: rm}`"),
    ("rule_condition_outside_when", "E101", "missing required key 'when' in transform 'f' (rules.0): the condition "
     "(field, regex) goes under `when` | write `when: {field: cmd, regex: \"history -c\"}`"),
    ("mysql_jdbc_url", "E100", "unknown key 'url' in sink 'db' | give host: db.internal, port: 3307, database: shop "
     "(and user, password) instead of a JDBC url"),
    ("rule_condition_outside_when", "E100", "unknown key 'equals' in transform 'f' (rules.1) | a condition's operator "
     "is one of: regex, like, contains, starts_with, ends_with, eq, ne, in, gt"),
    ("duplicate_keys", "E001", "duplicate key 'count' (first defined at line 6)"),
    ("cycle", "E202", "b -> c -> a -> b"),
    ("bad_duration", "E102", "invalid duration '10 minutes' for 'size' in transform 'w'"),
    ("sql_parse_error", "E311", "incomplete expression"),
    ("env_unset", "E004", "ETL_TEST_NEVER_SET_BOOTSTRAP"),
    ("event_time_string", "E322", "is string, not a timestamp"),
    ("duplicate_rule_id", "E303", "first defined at duplicate_rule_id.yaml:9"),
    ("tests_block", "E207", "did you mean 'access'?"),
    ("schema_types", "E102", "did you mean 'timestamp'?"),
    ("tests_block", "E207", "did you mean 'out'?"),
]


def _check(name: str):
    cwd = os.getcwd()
    os.chdir(HERE)  # diagnostics name files as given on the command line
    try:
        return check_file(f"{name}.yaml", environ={})
    finally:
        os.chdir(cwd)


def test_at_least_40_fixtures_and_all_listed():
    files = sorted(p.stem for p in HERE.glob("*.yaml"))
    assert len(files) >= 40
    assert files == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_diagnostics(name):
    checked = _check(name)
    got = []
    for d in checked.report.sorted():
        item = (d.code, d.span.line, d.span.col)
        if d.span.file != f"{name}.yaml":
            item += (d.span.file,)
        got.append(item)
    assert got == EXPECTED[name], "\n".join(d.render() for d in checked.report.sorted())
    assert checked.report.errors, "an invalid fixture must have at least one error"
    assert checked.plan is None
    assert all(d.code != "E999" for d in checked.report.diagnostics)


@pytest.mark.parametrize("name,code,text", MESSAGES)
def test_messages_and_hints(name, code, text):
    checked = _check(name)
    found = [f"{d.message} | {d.hint}" for d in checked.report.diagnostics if d.code == code]
    assert any(text in f for f in found), found


def test_a_jdbc_url_hint_never_shows_its_password():
    checked = _check("mysql_jdbc_url")
    assert checked.report.diagnostics and not any("hunter2" in d.render() for d in checked.report.diagnostics)
