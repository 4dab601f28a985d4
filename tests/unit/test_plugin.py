"""A component from outside etl: the memo sink of tests/plugin, registered through the `etl.components`
entry point of a temporary `*.dist-info` on the path. It validates, explains and runs; no file under etl/
names it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugin"


def _installed(tmp_path: Path) -> Path:
    """A folder holding the plugin's distribution metadata (its entry point) and the example pipeline."""
    info = tmp_path / "site" / "memo_sink-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memo-sink\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[etl.components]\nmemo = memo_sink\n")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(PLUGIN / "pipeline.yaml", work / "pipeline.yaml")
    return work


def _etl(tmp_path: Path, *args: str, plugin: bool = True, timeout: int = 120) -> subprocess.CompletedProcess:
    paths = [str(ROOT), str(PLUGIN)] + ([str(tmp_path / "site")] if plugin else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.run([sys.executable, *args], cwd=tmp_path / "work", env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_plugin_touches_no_file_under_etl():
    tracked = subprocess.run(["git", "grep", "-l", "-e", "memo_sink", "-e", "type: memo", "--", "etl"], cwd=ROOT,
                             capture_output=True, text=True)
    assert tracked.stdout == ""


def test_plugin_sink_validates_and_explains(tmp_path):
    _installed(tmp_path)
    ok = _etl(tmp_path, "-m", "etl", "validate", "pipeline.yaml")
    assert ok.returncode == 0, ok.stderr
    explained = _etl(tmp_path, "-m", "etl", "explain", "pipeline.yaml")
    assert explained.returncode == 0, explained.stderr
    sinks = explained.stdout.split("sinks:\n", 1)[1].split("\n\n", 1)[0]
    assert sinks.splitlines() == [
        "  out (memo) <- doubled",
        "    appends n, twice to out/rows.jsonl",
        "    columns: n:bigint, host:string, twice:bigint",
        "    delivery: at-least-once (memo sink is not idempotent: a replayed batch is appended again)",
    ]


def test_plugin_sink_checks_its_columns(tmp_path):
    work = _installed(tmp_path)
    text = (work / "pipeline.yaml").read_text()
    (work / "pipeline.yaml").write_text(text.replace("fields: [n, twice]", "fields: [n, thrice]"))
    bad = _etl(tmp_path, "-m", "etl", "validate", "pipeline.yaml")
    assert bad.returncode == 1
    assert bad.stdout.splitlines()[:2] == [
        "pipeline.yaml:21:17: E310 unknown column 'thrice' in sink 'out' (fields[1])",
        "    hint: did you mean 'twice'?",
    ]


def test_without_the_entry_point_the_type_is_unknown(tmp_path):
    _installed(tmp_path)
    res = _etl(tmp_path, "-m", "etl", "validate", "pipeline.yaml", plugin=False)
    assert res.returncode == 1
    assert res.stdout.splitlines()[0].startswith("pipeline.yaml:18:11: E103 unknown sink type 'memo'")


def test_plugin_builder_is_registered_and_imports(tmp_path):
    _installed(tmp_path)
    code = ("from etl import registry; e = registry.lookup('sink', 'memo'); b = e.load_builder(); "
            "print(e.builder, b.__module__, b.__name__, sorted(registry.types('sink')))")
    res = _etl(tmp_path, "-c", code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split(" ", 3) == ["memo_sink.builder:MemoSink", "memo_sink.builder", "MemoSink",
                                        "['elasticsearch', 'file', 'kafka', 'memo', 'mysql', 'print', 'rocketmq']\n"]


@pytest.mark.spark
def test_plugin_sink_runs(tmp_path):
    work = _installed(tmp_path)
    res = _etl(tmp_path, "-m", "etl", "run", "pipeline.yaml", "--once", "-q", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = [json.loads(line) for line in (work / "out" / "rows.jsonl").read_text().splitlines()]
    assert rows == [{"n": 1, "twice": 2}, {"n": 2, "twice": 4}, {"n": 3, "twice": 6}, {"n": 4, "twice": 8}]
