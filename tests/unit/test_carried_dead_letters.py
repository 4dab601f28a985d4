"""A split write's failed rows by stage (etl.compile.deadletter.carried_stages): the rows a source's first stage
carried for the source (their reason marked with CARRIED) are the source's, their reason as the source gave it; the
others the stage's own. The Spark side: tests/spark/test_carried_dead_letters.py."""

from __future__ import annotations

import pyarrow as pa

from etl.compile.deadletter import CARRIED, carried_stages
from etl.dead_letters import ERR, PAYLOAD


def table(rows: list[tuple[str | None, str]]) -> pa.Table:
    return pa.table({ERR: pa.array([e for e, _ in rows], pa.string()), PAYLOAD: pa.array([p for _, p in rows])})


def rows(t: pa.Table) -> list[tuple[str, str]]:
    return list(zip(t.column(ERR).to_pylist(), t.column(PAYLOAD).to_pylist(), strict=True))


def test_carried_rows_are_the_sources_and_the_others_the_stages():
    failed = table([(CARRIED + "line is not valid UTF-8", "YmFk"), ("no match for grok pattern", "x y"),
                    (CARRIED + "record of 9 bytes", "abc")])
    got = carried_stages(failed, "parsed", "lines")
    assert [(stage, rows(t)) for stage, t in got] == [
        ("lines", [("line is not valid UTF-8", "YmFk"), ("record of 9 bytes", "abc")]),
        ("parsed", [("no match for grok pattern", "x y")])]


def test_a_stage_carrying_nothing_keeps_its_rows_whole():
    failed = table([("no match for grok pattern", "x y")])
    assert [(s, rows(t)) for s, t in carried_stages(failed, "parsed", None)] == [
        ("parsed", [("no match for grok pattern", "x y")])]
    assert [(s, rows(t)) for s, t in carried_stages(failed, "parsed", "lines")] == [
        ("parsed", [("no match for grok pattern", "x y")])]
