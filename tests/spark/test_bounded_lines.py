"""etl/jvm/BoundedLines.java through the jsonl and text readers (JsonLinesFormat, TextLinesFormat): on 3,000 random
lines of valid and invalid UTF-8 and JSON escapes, exactly the lines Python's UTF-8 decoder refuses are rejected
(at the offset it names), and in jsonl the lines with a lone surrogate's escape; a line over the maximum is cut to
its first bytes with its size; a line at the maximum is kept whole. Each line once, in order."""

from __future__ import annotations

import base64
import random
import re
from pathlib import Path

import pytest

from etl.components.sources.file.build import CORRUPT, JSON_LINES, REJECT, TEXT_LINES

pytestmark = pytest.mark.spark

PIECES = [b"a", b"\\", b"\\u", b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"\\\\ud800", b"\xc3\xa9", b"\xe2\x82\xac",
          b"\xf0\x9f\x98\x80", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80\xaf", b"\xc3",
          b"\xe2\x82", b"x" * 17, b'"', b"\\ud800\\u0041", b"\\uD800", b"\\uDBFF\\uDFFF", b"\\\xc3\xa9"]
HEX4 = re.compile(rb"[0-9a-fA-F]{4}")


def lone_escape(b: bytes) -> int | None:
    """The offset of the first JSON escape of a lone surrogate (a backslash escapes the next ASCII byte)."""
    i = 0
    while i < len(b):
        if b[i] != 0x5C:
            i += 1
            continue
        if i + 1 >= len(b) or b[i + 1] != ord("u"):
            i += 1 if i + 1 >= len(b) or b[i + 1] >= 0x80 else 2
            continue
        u = int(b[i + 2:i + 6], 16) if HEX4.fullmatch(b[i + 2:i + 6]) else -1
        if 0xD800 <= u <= 0xDFFF:
            low = b[i + 8:i + 12]
            if u <= 0xDBFF and b[i + 6:i + 8] == b"\\u" and HEX4.fullmatch(low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                i += 12
                continue
            return i
        i += 2
    return None


def expected(line: bytes, json: bool) -> str | None:
    try:
        line.decode("utf-8")
        bad = None
    except UnicodeDecodeError as e:
        bad = e.start
    lone = lone_escape(line) if json else None
    if bad is not None and (lone is None or bad < lone):
        return (f"line is not valid UTF-8 (byte 0x{line[bad]:02X} at offset {bad}); payload: the line's {len(line)} "
                "bytes in base64")
    if lone is not None:
        return (f"json escape {line[lone:lone + 6].decode()} at offset {lone} is a lone surrogate, not a Unicode "
                "character")
    return None


def read(spark, fmt: str, folder: Path, schema: str, cap: int):
    reader = (spark.read.format(fmt).schema(schema).option("etlMaxRecordBytes", str(cap))
              .option("etlRejectColumn", REJECT))
    if fmt == JSON_LINES:
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
    return reader.load(str(folder)).collect()


def test_checked_lines_match_pythons_decoder(spark, tmp_path: Path) -> None:
    rnd = random.Random(35)
    lines = [b"".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 12))) for _ in range(3000)]
    cap = 1000  # above every random line
    lines += [b"y" * cap, b"z" * (cap + 1) + b"\xe2\x82\xac"]
    (tmp_path / "in.txt").write_bytes(b"\n".join(lines) + b"\n")

    rows = read(spark, TEXT_LINES, tmp_path, f"value string, {REJECT} string", cap)
    assert len(rows) == len(lines)
    for line, row in zip(lines[:-2], rows, strict=False):
        want = expected(line, json=False)
        assert row[REJECT] == want, line
        assert row["value"] == (base64.b64encode(line).decode() if want else line.decode())
    assert (rows[-2]["value"], rows[-2][REJECT]) == ("y" * cap, None)
    assert rows[-1][REJECT] == (f"record of {cap + 5} bytes (line end included) is over the maximum record size of "
                                f"{cap} bytes (ETL_MAX_RECORD_MB); payload: its first {cap + 1} bytes")
    assert rows[-1]["value"] == "z" * (cap + 1)

    json_rows = read(spark, JSON_LINES, tmp_path, f"a string, {CORRUPT} string, {REJECT} string", cap)
    assert len(json_rows) == len(lines)  # every line is malformed JSON or rejected: one row each
    got = [r[REJECT] for r in json_rows[:-2]]
    assert got == [expected(line, json=True) for line in lines[:-2]]
    assert sum(g is not None for g in got) > 1000
