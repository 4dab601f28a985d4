"""Log rotation under a file source: what Spark's file stream source does not handle (a renamed file read
again, appended lines, a truncated or recreated file never read) is said once per file, naming it. No JVM."""

from __future__ import annotations

import os
import textwrap

from etl.runtime.file_watch import FileWatch


def src(tmp_path, path="logs"):
    return FileWatch("logs", str(tmp_path / path))


def test_logrotate_create_rename_then_recreate(tmp_path, caplog):
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "app.log"
    log.write_text("a\nb\n")
    w = src(tmp_path)
    assert w.check() == []  # the baseline
    os.rename(log, tmp_path / "logs" / "app.log.1")
    log.write_text("c\n")
    said = w.check()
    assert said == [  # by name: the recreated file, then the renamed one
        f"file source 'logs': {log} was replaced by a new file of the same name: the file source reads a name once, "
        f"so the new file's lines are not read (rotate to new names, e.g. logrotate's dateext, or into a folder the "
        f"source does not watch)",
        f"file source 'logs': {log} was renamed to {log}.1, which the source also reads: the file source keys files "
        f"by name, so it reads {log}.1 again, as a new file (its lines twice; rotate into a folder the source does "
        f"not watch)",
    ]
    assert w.check() == []  # each said once
    assert [r.getMessage() for r in caplog.records if r.name == "etl.file"] == said


def test_copytruncate_and_append(tmp_path):
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "app.log"
    log.write_text("a\nb\n")
    w = src(tmp_path)
    w.check()
    with open(log, "a") as f:
        f.write("c\n")
    assert w.check() == [f"file source 'logs': {log} grew after it appeared (4 -> 6 bytes): the file source reads a "
                         f"file once, when it first lists it, so lines appended after that are not read (write a "
                         f"file elsewhere and move it into the folder when complete)"]
    with open(log, "a") as f:
        f.write("d\n")
    assert w.check() == []  # once per file
    os.truncate(log, 0)  # copytruncate
    assert w.check() == [f"file source 'logs': {log} was truncated (8 -> 0 bytes): the file source read it once, so "
                         f"lines written to it from now on are not read (copytruncate is not supported: rotate by "
                         f"renaming)"]
    log.write_text("e\n")
    assert w.check() == []  # the same file growing again: said already (grew)


def test_one_file_source_and_rotation_out_of_its_sight(tmp_path):
    """A source reading one file: its rotated copy is not matched (no duplicate), its recreation is said."""
    log = tmp_path / "app.log"
    log.write_text("a\n")
    w = src(tmp_path, "app.log")
    w.check()
    os.rename(log, tmp_path / "app.log.1")
    assert w.check() == []  # gone: nothing the source reads
    log.write_text("b\n")
    said = w.check()
    assert len(said) == 1 and said[0].startswith(f"file source 'logs': {log} was replaced by a new file")
    (tmp_path / "other.log").write_text("x\n")
    (tmp_path / ".hidden").write_text("x\n")
    assert w.check() == []


def test_a_run_watches_its_streamed_file_sources(tmp_path):
    from etl.check import check_file
    from etl.runtime.runner import PipelineRun

    (tmp_path / "in").mkdir()
    (tmp_path / "t.csv").write_text("id,v\n1,x\n")
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent("""\
        name: watch
        sources:
          - {id: ev, type: file, path: in, format: jsonl, schema: {id: string}}
          - {id: t, type: file, path: t.csv, format: csv, static: true}
        transforms:
          - {id: lk, type: lookup, input: ev, table: t, on: {id: id}}
        sinks:
          - {id: out, type: print, input: lk}
        """))
    c = check_file(p)
    assert c.plan is not None
    run = PipelineRun(c.plan, None)
    assert [(w.source, w.path) for w in run.watches] == [("ev", str(tmp_path / "in"))]  # not the static table
