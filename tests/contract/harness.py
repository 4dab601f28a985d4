"""Pipelines for the contract suite: jsonl files in a folder -> one sink, run in-process on the shared session."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any

from etl.check import check_file
from tests.contract.adapters import canonical

SCHEMA = {"id": "bigint", "name": "string", "amount": "double", "ts": "timestamp"}
SINK_LINE = 5  # line of the sink in the generated pipeline file (for "names its YAML line")


def rows(start: int, n: int) -> list[dict]:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    return [{"id": i, "name": f"name-{i} ü", "amount": round(i * 1.25, 2),
             "ts": (t0 + timedelta(seconds=i)).isoformat().replace("+00:00", "Z")} for i in range(start, start + n)]


def write_input(folder: Path, index: int, data: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".in-{index:04d}.tmp"
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
    tmp.rename(folder / f"in-{index:04d}.jsonl")


def pipeline_text(name: str, source: dict, sink: dict, *, trigger: dict | None = None,
                  checkpoint: str = "state/checkpoint") -> str:
    lines = [
        f"name: {name}",
        "sources:",
        "  - " + json.dumps({"id": "events", **source}),
        "sinks:",
        "  - " + json.dumps({"id": "out", "input": "events", **sink}),  # line SINK_LINE
        f"checkpoint: {checkpoint}",
    ]
    if trigger:
        lines.append("trigger: " + json.dumps(trigger))
    return "\n".join(lines) + "\n"


def file_source(folder: Path, per_trigger: int | None = 1) -> dict:
    src: dict[str, Any] = {"type": "file", "path": str(folder), "format": "jsonl", "schema": SCHEMA}
    if per_trigger:
        src["max_files_per_trigger"] = per_trigger
    return src


def plan_of(work: Path, text: str, file: str = "p.yaml") -> Any:
    work.mkdir(parents=True, exist_ok=True)
    (work / file).write_text(text)
    c = check_file(work / file, programs=True)
    assert c.plan is not None, "\n".join(d.render() for d in c.report.sorted())
    return c.plan


def run_once(spark: Any, work: Path, text: str, file: str = "p.yaml") -> Any:
    from etl.runtime.runner import PipelineRun, RunOptions

    run = PipelineRun(plan_of(work, text, file), spark, RunOptions(once=True, progress="none"))
    run.start()
    run.wait()
    return run


def start_continuous(spark: Any, work: Path, text: str) -> Any:
    from etl.runtime.runner import PipelineRun, RunOptions

    run = PipelineRun(plan_of(work, text), spark, RunOptions(once=False, progress="none"))
    run.start()
    return run


def check_running(run: Any) -> None:
    for s in run.streams:
        if not s.isActive and s.exception() is not None:
            raise AssertionError(f"query failed: {run.failure or s.exception()}")


def wait_until(pred: Any, timeout: float, run: Any = None, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run is not None:
            check_running(run)
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def assert_exactly(stored: list[dict], expected: list[dict]) -> None:
    assert_no_loss_or_doubles(Counter(canonical(r) for r in stored), Counter(canonical(r) for r in expected),
                              f"{len(stored)} rows stored, {len(expected)} expected", show=5)


def assert_no_loss_or_doubles(got: Counter, want: Counter, context: str, show: int = 5) -> None:
    """Nothing stored twice, nothing missing, nothing unexpected; the message names the first few of each."""
    doubled = sorted(k for k, n in got.items() if n > 1)
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    assert not doubled and not missing and not extra, (
        f"{context}; doubled {doubled[:show]} ({len(doubled)}), "
        f"missing {missing[:show]} ({len(missing)}), unexpected {extra[:show]} ({len(extra)})")
