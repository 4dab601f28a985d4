"""The Spark SQL type grammar of schemas (etl/graph/types.py): valid types pass, each invalid one names
its bad token at its exact offset."""
import pytest

from etl.graph.types import parse_type

VALID = ["string", "BIGINT", "decimal", "decimal(10)", "decimal(38, 0)", "numeric(5,5)", "varchar(64)", "char(1)",
         "array<string>", "map<string, array<int>>", "struct<>", "struct<a: int, b string NOT NULL COMMENT 'x'>",
         "struct<`a b`: map<string,struct<c: double>>>", "interval", "interval day to second", "interval year to month",
         "interval hour", "timestamp_ntz", " int "]

INVALID = [
    ("strng", "unknown type 'strng'", 0),
    ("array<strng>", "unknown type 'strng'", 6),
    ("decimal(39)", "decimal precision must be between 1 and 38, not 39", 8),
    ("decimal(5,6)", "decimal scale must be between 0 and 5, not 6", 10),
    ("decimal(99999999999999999999)", "decimal precision must be between 1 and 38, not 99999999999999999999", 8),
    ("varchar", "expected '(', found the end of the type", 7),
    ("varchar(0)", "varchar length must be between 1 and 2147483647, not 0", 8),
    ("array<string", "expected '>', found the end of the type", 12),
    ("map<string>", "expected ',', found '>'", 10),
    ("struct<a int,>", "expected a field name, found '>'", 13),
    ("struct<a int NOT>", "expected NULL after NOT, found '>'", 16),
    ("interval second to day", "invalid interval end 'day' after second to", 19),
    ("int)", "unexpected ')' after the type", 3),
    ("", "expected a type, found the end of the type", 0),
    ("string;drop table x", "unexpected character ';'", 6),
    ("array<" * 40 + "int" + ">" * 40, "types nest more than 32 levels deep", 198),
]


@pytest.mark.parametrize("text", VALID)
def test_valid_types(text):
    assert parse_type(text) is None


@pytest.mark.parametrize("text,message,offset", INVALID)
def test_invalid_types(text, message, offset):
    err = parse_type(text)
    assert (err.message, err.offset) == (message, offset)


def test_not_text():
    assert parse_type(12).message == "a type is text, not int"
