"""Table-driven: every invalid SQL script yields exactly these diagnostics (code, line, col).

Fixtures: tests/fixtures/sql_invalid/*.sql. Positions are 1-based, in the script. The list is the
complete output of `etl validate` for the file (warnings included): a statement that fails is
reported once; what depends on it is skipped without a second diagnostic.
"""
from pathlib import Path

import pytest

from etl.check import check_file

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "sql_invalid"

EXPECTED = {
    'aggregate_over_expression': [('E011', 5, 38)],
    'bad_interval': [('E102', 5, 75)],
    'bad_jdbc_url': [('E102', 2, 56)],
    'bad_option_syntax': [('E010', 1, 49)],
    'bad_pipeline_name': [('E102', 1, 23)],
    'bad_regex_in_where': [('E300', 5, 77)],
    'bad_watermark': [('E010', 2, 23)],
    'column_count_mismatch': [('E104', 5, 24)],
    'column_without_type': [('E010', 1, 29)],
    'create_function': [('E350', 1, 26)],
    'cumulate_group_window': [('E011', 4, 60)],
    'cumulate_step_not_dividing': [('E102', 4, 94)],
    'dedupe_keep_last_proctime': [('E011', 5, 63)],
    'duplicate_table': [('E200', 4, 14)],
    'duplicate_view': [('E200', 6, 13)],
    'empty_script': [('E101', 1, 1)],
    'emit_after_watermark': [('E101', 6, 6)],
    'emit_bad_lateness': [('E102', 1, 40)],
    'emit_on_continuous_aggregate': [('E011', 6, 46)],
    'emit_without_delay_before': [('E011', 6, 6)],
    'emit_without_window': [('E011', 6, 1)],
    'end_without_statement_set': [('E010', 5, 1)],
    'env_unset': [('E004', 3, 42)],
    'function_aggregate_in_projection': [('E353', 6, 34)],
    'function_callable_missing': [('E350', 1, 26)],
    'function_language_java': [('E011', 1, 61)],
    'function_table_columns': [('E104', 6, 66)],
    'function_wrong_arity': [('E352', 6, 34)],
    'generator_unknown_kind': [('E100', 1, 53)],
    'group_by_expression': [('E011', 6, 48)],
    'grouping_sets_continuous': [('E011', 4, 80)],
    'having_without_group_by': [('E010', 5, 60)],
    'hop_one_interval': [('E010', 5, 81)],
    'hop_windows_per_event': [('E102', 5, 81)],
    'insert_column_list_unknown': [('E310', 4, 23)],
    'insert_columns_mismatch': [('E104', 5, 43)],
    'join_ambiguous_column': [('E310', 7, 46)],
    'join_ambiguous_key': [('E310', 7, 24)],
    'join_ambiguous_columns': [('E310', 7, 36), ('E310', 7, 44), ('E310', 7, 58), ('E310', 9, 9)],  # every one
    'join_keys_differ': [('E011', 8, 6)],
    'join_state_ttl': [('W015', 1, 5), ('E321', 8, 84)],
    'join_unknown_alias': [('E201', 8, 19)],
    'join_without_time_bound': [('E321', 7, 84)],
    'kafka_group_offsets': [('E011', 2, 54)],
    'kafka_specific_offsets_bad': [('E102', 2, 79)],
    'kafka_timestamp_without_millis': [('E101', 2, 25)],
    'lateral_no_names': [('E104', 3, 46)],
    'lateral_udtf': [('E011', 3, 54)],
    'limit': [('E011', 5, 59)],
    'lookup_not_dimension': [('E203', 6, 67)],
    'lookup_unknown_column': [('E310', 6, 36)],
    'many_errors': [('E010', 1, 19), ('E103', 2, 41), ('W013', 3, 76), ('E310', 5, 23)],
    'metadata_on_json': [('E011', 1, 28)],
    'missing_option': [('E101', 1, 28)],
    'no_connector': [('E101', 1, 28)],
    'no_insert': [('E101', 1, 1)],
    'order_by': [('E011', 5, 62)],
    'over_elsewhere': [('E011', 5, 34)],
    'print_as_source': [('E203', 1, 41)],
    'proctime_window_over_watermark': [('E320', 4, 59)],
    'query_syntax': [('E010', 8, 16)],
    'read_a_sink': [('E203', 6, 32)],
    'reserved_flag_column': [('E102', 1, 28)],
    'right_join': [('E011', 6, 73)],
    'select_without_from': [('E010', 2, 24)],
    'statement_set_not_insert': [('E011', 5, 1)],
    'statement_set_without_end': [('E010', 4, 1)],
    'template_undefined': [('E003', 3, 42)],
    'topn_continuous_order_by_expression': [('E011', 6, 63)],
    'topn_early_window': [('E104', 7, 13)],
    'topn_order_by_expression': [('E011', 7, 68)],
    'topn_over_updates': [('E011', 6, 13)],
    'topn_rank_above': [('E011', 7, 104)],
    'spark_call_arity': [('E012', 4, 34)],
    'spark_call_signatures': [('E102', 4, 40), ('E012', 4, 64)],
    'state_ttl_invalid': [('E102', 1, 30)],
    'time_column': [('E011', 1, 33)],
    'spark_casts': [('E102', 4, 39), ('E102', 4, 97)],
    'lookup_ambiguous_column': [('E310', 5, 36)],
    'tumble_too_many_intervals': [('E010', 4, 137)],
    'tvf_alone': [('E011', 4, 80)],
    'unknown_column_aggregate': [('E310', 5, 73)],
    'unknown_column_group_by': [('E310', 5, 70)],
    'unknown_column_select': [('E310', 5, 24)],
    'unknown_column_where_expr': [('E310', 5, 66)],
    'unknown_column_where_rule': [('E310', 5, 59)],
    'unknown_connector': [('E103', 1, 41)],
    'unknown_function': [('E012', 4, 34)],
    'unknown_function_where': [('E012', 4, 59)],
    'unknown_insert_target': [('E201', 4, 13)],
    'unknown_setting': [('E100', 1, 5)],
    'unknown_table': [('E201', 5, 46)],
    'unknown_type': [('E010', 1, 19)],
    'unknown_view_in_join': [('E201', 5, 67)],
    'unknown_with_key': [('E100', 1, 83)],
    'unknown_with_key_kafka': [('E101', 1, 28), ('E100', 2, 3)],
    'unsupported_statement': [('E011', 4, 1)],
    'unterminated_string': [('E010', 1, 60)],
    'watermark_not_timestamp': [('E322', 2, 23)],
    'watermark_unknown_column': [('E310', 2, 24)],
    'window_join_hop': [('E011', 6, 4)],
    'window_join_on': [('E011', 6, 4)],
    'window_on_other_column': [('E320', 5, 59)],
    'window_over_updates': [('E011', 6, 71)],
    'window_without_watermark': [('E320', 3, 59)],
}


def test_every_fixture_is_in_the_table():
    assert sorted(p.stem for p in HERE.glob("*.sql")) == sorted(EXPECTED)
    assert len(EXPECTED) >= 40


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_invalid_sql_script(name):
    c = check_file(HERE / f"{name}.sql", environ={})
    got = [(d.code, d.span.line, d.span.col) for d in c.report.sorted()]
    assert got == EXPECTED[name], "\n".join(d.render() for d in c.report.sorted())
    assert c.plan is None
    assert all(d.span.file == str(HERE / f"{name}.sql") for d in c.report.diagnostics)


@pytest.mark.parametrize("name,message,hint", [
    ("unknown_table", "unknown table or view 'orderz'", "did you mean 'orders'?"),
    ("unknown_with_key", "unknown option 'isJsonDat' for a file source", "did you mean 'isJsonData'?"),
    ("unknown_with_key_kafka", "unknown option 'properties.bootstrap.server' for a kafka source",
     "did you mean 'properties.bootstrap.servers'?"),
    ("unknown_connector", "unknown connector type 'rocketmqq'", "did you mean 'rocketmq'?"),
    ("unknown_column_select", "unknown column 'order_idd' in transform 'out_select' (fields[0])",
     "did you mean 'order_id'?"),
    ("unknown_column_where_rule", "unknown column 'statu' in rule 'r1' of filter 'out_where'",
     "did you mean 'status'?"),
    ("unknown_type", "unknown column type 'VARCHR'", "did you mean 'VARCHAR'?"),
    ("unknown_setting", "unknown setting 'pipeline.nam'", "did you mean 'pipeline.name'?"),
    ("lookup_unknown_column", "unknown column 'nam' in dimension table 'dim'", "did you mean 'name'?"),
    ("unknown_function", "unknown function 'JSON_VALU'", "did you mean 'json_value'?"),
    ("spark_call_arity", "substring_index takes 3 arguments, got 2",
     "Spark refuses the call (WRONG_NUM_ARGS); see DESCRIBE FUNCTION substring_index"),
    ("lookup_ambiguous_column", "column 'name' is ambiguous: o and d both have it", "qualify it: o.name or d.name"),
    ("spark_casts", "CAST of array<string> to int is a cast Spark refuses (DATATYPE_MISMATCH at run) (transform "
     "'out_select' (fields[1]))", "Spark's CAST turns array into string, variant, array only"),
    ("spark_call_signatures", "argument 1 of upper is array<string>: Spark takes string, int, bigint, double, decimal, "
     "boolean, date, timestamp, binary there (transform 'out_select' (fields[1]))", "convert it, e.g. CAST(... AS "
     "string)"),
    ("function_callable_missing", "function 'shout': module 'fixture_functions' (fixture_functions.py) has no "
     "function 'shoot'", "did you mean 'shout'?"),
    ("query_syntax", "incomplete expression: an operand is missing", None),
    ("unterminated_string", "unterminated string", "close it on the same statement"),
    ("tvf_alone", "the rows of a window table function (TUMBLE) alone are not a query in Flink: aggregate them "
     "(GROUP BY window_start, window_end), rank them (window Top-N) or deduplicate them (window deduplication)",
     "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS "
     "rownum FROM TABLE(...)) WHERE rownum <= 3"),
    ("window_join_hop", "a window join joins the rows of two window table functions of one kind, size, slide or "
     "step and offset", "window both sides alike"),
    ("window_join_on", "a window join's ON is the keys and L.window_start = R.window_start AND L.window_end = "
     "R.window_end", "AND L.window_start = R.window_start AND L.window_end = R.window_end"),
    ("join_state_ttl", "a FULL JOIN without a time bound is not supported: Flink writes an unmatched row padded with "
     "NULLs at once and retracts it when its match arrives (an update stream); etl's sinks append, so a padded row "
     "could not be withdrawn", "bound it by event time, an interval join (AND b.ts BETWEEN a.ts - INTERVAL '1' MINUTE "
     "AND a.ts + INTERVAL '1' MINUTE: a padded row goes out once the watermark passes the bound), or write an INNER "
     "JOIN (a regular join)"),
    ("state_ttl_invalid", "invalid state TTL 'a day'", "a positive duration such as '1 h', '30 min', '10 s'"),
    ("cumulate_group_window", "CUMULATE is a window table function only",
     "FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), step, size)) ... GROUP BY window_start, window_end"),
    ("statement_set_not_insert", "a statement set holds INSERT INTO statements only",
     "write the other statements before BEGIN STATEMENT SET"),
    ("proctime_window_over_watermark", "window 'o_window' uses processing time, but its input carries event time "
     "with a watermark: Spark allows one watermark per query, and a processing-time window needs its own",
     "window by the event-time column (`time: event`; in SQL the WATERMARK column), or read the stream through a "
     "source without event time"),
    ("time_column", "the TIME type is not supported (Spark 4.3's TIME is a preview behind spark.sql.timeType.enabled, "
     "off by default: a TIME column, CAST to TIME and HOUR(t) fail with UNSUPPORTED_TIME_TYPE; its TIME is TIME(6), "
     "Flink's TIME(0))",
     "declare the column STRING (text such as 12:00:00) or TIMESTAMP"),
    ("window_without_watermark", "window time column 'ts' has no watermark",
     "declare `WATERMARK FOR ts AS ts - INTERVAL '5' SECOND` in its CREATE TABLE, or window on a PROCTIME() column"),
])
def test_messages_and_did_you_mean(name, message, hint):
    c = check_file(HERE / f"{name}.sql", environ={})
    (d,) = [d for d in c.report.errors if d.message == message]
    assert d.hint == hint
