"""A transform from outside etl: `first_seen` of tests/fixtures/plugin (etl_test_plugin), registered through the
`etl.components` entry point of its `etl_test_plugin-0.1.dist-info` on PYTHONPATH. It is stateful (a key's later
rows are dropped across micro-batches), sends rows without a key to the dead-letter sink with its stage and
reason, and picks one of its own engines through the physical planner: every trait etl asks, set by the plugin,
no file under etl/ naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "fixtures" / "plugin"


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(PLUGIN / "input", work / "input")
    shutil.copy(PLUGIN / "pipeline.yaml", work / "pipeline.yaml")
    os.utime(work / "input" / "a.jsonl", (1_000_000, 1_000_000))  # a.jsonl is the first micro-batch, b.jsonl the
    os.utime(work / "input" / "b.jsonl", (2_000_000, 2_000_000))  # second (one file per trigger, oldest first)
    return work


def _etl(work: Path, *args: str, timeout: int = 120, **env: str) -> subprocess.CompletedProcess:
    paths = os.pathsep.join([str(ROOT), str(PLUGIN)])
    return subprocess.run([sys.executable, "-m", "etl", *args], cwd=work, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": paths, **env})


def test_the_plugin_transform_touches_no_file_under_etl():
    tracked = subprocess.run(["git", "grep", "-l", "-e", "first_seen", "-e", "etl_test_plugin", "--", "etl"],
                             cwd=ROOT, capture_output=True, text=True)
    assert tracked.returncode == 1 and tracked.stdout == ""


def test_plugin_transform_validates_and_explains_stateful_with_its_engine(tmp_path):
    work = _work(tmp_path)
    ok = _etl(work, "validate", "pipeline.yaml")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    out = _etl(work, "explain", "pipeline.yaml")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "  first (first_seen) <- visits\n    first row per user\n" in text
    assert "  first_ci (first_seen) <- visits\n    first row per user, its case ignored\n" in text
    queries = text.split("queries:\n", 1)[1].split("\n\n", 1)[0]
    assert "  query first: streaming from first\n    writes out <- first\n    writes dead_letter <- first (dead " \
           "letters)" in queries
    engines = text.split("engines:\n", 1)[1]
    assert ("  first: spark-stream - in the streaming plan (state in RocksDB)\n"
            "  first first_seen: dedupe-state - Spark's dropDuplicates on the key (its keys in the state store)\n"
            ) in engines
    assert ("  first_ci: spark-stream - in the streaming plan (state in RocksDB)\n"
            "  first_ci first_seen: python-state - transformWithState: a Python processor keeping a flag per\n"
            "      lower-cased key\n"
            "    not dedupe-state: it compares the key column as written: ignore_case folds keys first\n"
            ) in engines


def test_plugin_transform_misuse_is_reported_at_its_position(tmp_path):
    work = _work(tmp_path)
    text = (work / "pipeline.yaml").read_text()
    text = text.replace("    key: user\n", "    key: usr\n", 1).replace("ignore_case: true", "ignore_case: maybe")
    (work / "pipeline.yaml").write_text(text)
    bad = _etl(work, "validate", "pipeline.yaml")
    assert bad.returncode == 1
    assert bad.stdout.splitlines()[:3] == [
        "pipeline.yaml:13:10: E310 unknown column 'usr' in transform 'first' (key)",
        "    hint: did you mean 'user'?",
        "pipeline.yaml:18:18: E102 invalid value 'maybe' for 'ignore_case' in transform 'first_ci': input should be "
        "a valid boolean, unable to interpret input",
    ]


def test_without_the_plugin_the_transform_type_is_unknown(tmp_path):
    work = _work(tmp_path)
    res = subprocess.run([sys.executable, "-m", "etl", "validate", "pipeline.yaml"], cwd=work, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 1
    assert res.stdout.splitlines()[0].startswith("pipeline.yaml:11:11: E103 unknown transform type 'first_seen'")


def _rows(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*.jsonl")) for x in f.read_text().splitlines()]


@pytest.mark.spark
def test_plugin_transform_runs_keeps_state_and_writes_dead_letters(tmp_path):
    work = _work(tmp_path)
    res = _etl(work, "run", "pipeline.yaml", "--once", "-q", timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    # bob's second row (n 7, the second micro-batch) is dropped by the state the first micro-batch left; so is
    # ANN's (n 4) where the case is ignored
    ann, bob, ann_upper, cid = {"user": "ann", "n": 1}, {"user": "bob", "n": 2}, {"user": "ANN", "n": 4}, \
        {"user": "cid", "n": 5}
    assert sorted(_rows(work / "out" / "first"), key=lambda r: r["n"]) == [ann, bob, ann_upper, cid]
    assert sorted(_rows(work / "out" / "first_ci"), key=lambda r: r["n"]) == [ann, bob, cid]
    dead = sorted(((d["stage"], d["reason"], json.loads(d["payload"])) for d in _rows(work / "state" / "dead_letters")),
                  key=lambda d: (d[0], d[2]["n"]))
    assert dead == [
        ("first", "first_seen 'first': no key in column 'user'", {"n": 3}),
        ("first", "first_seen 'first': no key in column 'user'", {"user": " ", "n": 6}),
        ("first_ci", "first_seen 'first_ci': no key in column 'user'", {"n": 3}),
        ("first_ci", "first_seen 'first_ci': no key in column 'user'", {"user": " ", "n": 6}),
    ]
