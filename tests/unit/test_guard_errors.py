"""Which failed jobs the runner evaluates again with guards (etl.compile.guard.row_error)."""

from __future__ import annotations

import pytest

from etl.compile.guard import row_error


def chained(text: str) -> BaseException:
    try:
        try:
            raise RuntimeError(text)
        except RuntimeError as inner:
            raise ValueError("An exception was raised by the Python Proxy.") from inner
    except ValueError as outer:
        return outer


@pytest.mark.parametrize("text", [
    "[CAST_INVALID_INPUT] The value 'x' of the type \"STRING\" cannot be cast to \"INT\" ... SQLSTATE: 22018",
    "Job aborted due to stage failure: ... [DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012",
    "org.apache.spark.SparkArithmeticException: [ARITHMETIC_OVERFLOW] overflow. SQLSTATE: 22003",
    "Caused by: java.lang.ArithmeticException: long overflow",
    "Caused by: java.time.format.DateTimeParseException: Text 'yesterday' could not be parsed",
    "java.lang.NumberFormatException: For input string: \"x\"",
])
def test_row_errors_are_retried_with_guards(text):
    assert row_error(RuntimeError(text))
    assert row_error(chained(text))  # found in the cause chain too


@pytest.mark.parametrize("text", [
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column ... cannot be resolved. SQLSTATE: 42703",
    "java.net.ConnectException: Connection refused",
    "SQLSTATE: 2200",  # not a full SQLSTATE
    "rule pattern step budget exceeded",
])
def test_other_failures_are_not(text):
    assert not row_error(chained(text))
