"""The tailing file source's offsets (`tail: true`): logrotate's create (rename + recreate), copytruncate and
appends read every line once, by file identity and offset, without Spark (the reader's own steps: the offset
Spark checkpoints, the pieces of a micro-batch, their lines)."""

from __future__ import annotations

import json
import logging
import os

from etl.runtime.file_watch import matching_files


def batch(folder, offset: dict) -> tuple[dict, list[str]]:
    """One micro-batch: the next offset (through JSON, as Spark checkpoints it) and the lines it reads."""
    from etl.components.sources.file.tail import advance, pieces, read_piece

    end = json.loads(json.dumps({"files": advance(offset["files"], matching_files(str(folder)), "logs")}))
    lines = []
    for p in pieces(offset, end):
        lines += read_piece(p, str(folder), "line", "_etl_reject", 1 << 24).column(0).to_pylist()
    return end, lines


def append(path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_logrotate_create_copytruncate_and_appends_read_each_line_once(tmp_path, caplog):
    logs = tmp_path / "logs"
    logs.mkdir()
    app = logs / "app.log"
    app.write_text("1\n2\n3")  # a line without its newline yet is not read
    off, got = batch(logs, {"files": {}})
    assert got == ["1", "2"]
    append(app, "\n4\r\n")  # its newline arrives; a CRLF line
    off, got = batch(logs, off)
    assert got == ["3", "4"]
    off, got = batch(logs, off)
    assert got == []  # nothing new: nothing read twice
    # logrotate create: the file renamed (its last lines written just before, not read yet), a new one created
    append(app, "5\n")
    os.rename(app, logs / "app.log.1")
    app.write_text("6\n")
    off, got = batch(logs, off)
    assert sorted(got) == ["5", "6"]  # the renamed file is not read again, only its new line
    assert sorted(v["path"] for v in off["files"].values()) == [str(app), f"{app}.1"]
    # copytruncate: app.log copied away, then truncated; lines written after read from its start
    os.truncate(app, 0)
    append(app, "7\n")
    with caplog.at_level(logging.WARNING, "etl.file"):
        off, got = batch(logs, off)
    assert got == ["7"]
    assert [r.getMessage() for r in caplog.records if r.name == "etl.file"] == [  # as long as before: its head
        f"file source 'logs': {app} was truncated (2 bytes read, 2 now): its lines are read again from its start"]
    os.truncate(app, 0)
    append(app, "8\n9\n")
    off, got = batch(logs, off)
    assert got == ["8", "9"]
    # the rotated copy deleted: dropped from the offset; a file appended to after its rename is followed
    os.remove(logs / "app.log.1")
    os.rename(app, logs / "app.log.2")
    append(logs / "app.log.2", "10\n")
    off, got = batch(logs, off)
    assert got == ["10"] and [v["path"] for v in off["files"].values()] == [f"{app}.2"]


def test_a_file_renamed_between_the_offset_and_the_read_is_found_by_identity(tmp_path):
    from etl.components.sources.file.tail import advance, pieces, read_piece

    (tmp_path / "a.log").write_text("x\ny\n")
    end = {"files": advance({}, matching_files(str(tmp_path)), "logs")}
    os.rename(tmp_path / "a.log", tmp_path / "b.log")
    (tmp_path / "a.log").write_text("other\n")  # a new file under the old name is not read in its place
    (p,) = pieces({"files": {}}, end)
    assert read_piece(p, str(tmp_path), "line", "_etl_reject", 1 << 24).column(0).to_pylist() == ["x", "y"]


def test_tail_is_for_text_files_and_explain_says_how_it_reads(tmp_path):
    from etl.check import check_file
    from etl.plan.explain import explain_plan

    (tmp_path / "in").mkdir()
    p = tmp_path / "p.yaml"
    p.write_text("name: t\nsources:\n  - {id: s, type: file, path: in, format: jsonl, schema: {a: string}, tail: true}\n"
                 "sinks:\n  - {id: o, type: print, input: s}\n")
    c = check_file(p)
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()] == [
        ("E104", 3, 5, "tail: true follows text files (format: text, not static) (in source 's')")]
    p.write_text(p.read_text().replace("format: jsonl, schema: {a: string}", "format: text"))
    c = check_file(p)
    assert c.plan is not None
    assert "tail: files followed by (device, inode) and byte offset" in explain_plan(c.plan)


def test_each_line_passes_the_line_checks_of_every_line_source():
    """As etl/jvm/BoundedLines.java: a line over the cap is its first bytes (no character cut) and the reason, an
    invalid UTF-8 line its bytes in base64; a CR before the LF is dropped; an unfinished last line waits."""
    from etl.components.sources.file.tail import checked_lines

    long = "é" * 700  # 1,400 bytes
    data = b"ok\r\n" + long.encode() + b"\n" + b"bad \xff byte\n" + b"\xed\xa0\x80\n" + b"half"
    values, reasons = checked_lines(data, 1000)
    assert values == ["ok", "é" * 512, "YmFkIP8gYnl0ZQ==", "7aCA"]
    assert reasons == [
        None,
        "record of 1400 bytes is over the maximum record size of 1000 bytes (ETL_MAX_RECORD_MB); payload: its "
        "first 1024 bytes",
        "line is not valid UTF-8 (byte 0xFF at offset 4); payload: the line's 10 bytes in base64",
        "line is not valid UTF-8 (byte 0xED at offset 0); payload: the line's 3 bytes in base64",
    ]
