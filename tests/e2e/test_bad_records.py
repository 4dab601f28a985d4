"""Bad input: with 10% malformed lines interleaved, the valid output is identical to a clean run's,
and every malformed line is in the dead-letter sink with its stage and reason (nothing dropped)."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import pytest

from etl.check import check_file
from etl.runtime.runner import PipelineRun, RunOptions
from scripts.gen_access_log import GARBAGE, lines as access_lines

pytestmark = pytest.mark.spark

JSONL = """\
    name: bad-json-{tag}
    sources:
      - {{id: src, type: file, path: input, format: jsonl, schema: {{id: bigint, user: string, amount: double}}}}
    transforms:
      - {{id: big, type: filter, input: src, expr: "amount >= 10"}}
      - {{id: shaped, type: derive, input: big, columns: {{cents: "cast(amount * 100 AS bigint)"}}}}
    sinks:
      - {{id: out, type: file, input: shaped, path: output, format: jsonl}}
    checkpoint: state/checkpoint
"""
GROK = """\
    name: bad-grok-{tag}
    sources:
      - {{id: logs, type: file, path: input, format: text}}
    transforms:
      - {{id: parsed, type: grok, input: logs, field: line, pattern: "%{{COMBINEDAPACHELOG}}", keep_original: false}}
      - {{id: typed, type: derive, input: parsed, columns: {{status: "cast(response AS int)"}}}}
    sinks:
      - {{id: out, type: file, input: typed, path: output, format: parquet}}
    checkpoint: state/checkpoint
"""
BAD_JSON = ['{"id": 1, "user": "x", "amount": ', "not json at all", '{"id": "seven", "user": "y", "amount": 3}',
            "[1, 2, 3]", '{"id": 5, "amount": "lots"}', "}{"]


def run(spark, folder: Path, text: str, lines: list[str]) -> tuple[list[dict], list[dict]]:
    (folder / "input").mkdir(parents=True)
    (folder / "input" / "part-0.txt").write_text("\n".join(lines) + "\n")
    (folder / "p.yaml").write_text(textwrap.dedent(text))
    c = check_file(folder / "p.yaml", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    r = PipelineRun(c.plan, spark, RunOptions(once=True, progress="none"))
    r.start()
    r.wait()
    out = folder / "output"
    if "parquet" in text:
        import pyarrow.parquet as pq

        rows = [row for f in sorted(out.glob("part-*.parquet")) for row in pq.read_table(f).to_pylist()]
    else:
        rows = [json.loads(x) for f in sorted(out.glob("part-*.jsonl")) for x in f.read_text().splitlines()]
    dl = folder / "state" / "dead_letters"
    dead = [json.loads(x) for f in sorted(dl.glob("part-*.jsonl")) for x in f.read_text().splitlines()]
    return rows, dead


def interleave(good: list[str], bad: list[str], rnd: random.Random) -> tuple[list[str], list[str]]:
    out, inserted = [], []
    for line in good:
        out.append(line)
        if rnd.random() < 0.1:
            b = rnd.choice(bad)
            out.append(b)
            inserted.append(b)
    return out, inserted


def key(r: dict) -> str:
    return json.dumps(r, sort_keys=True, default=str)


@pytest.mark.parametrize("kind", ["jsonl", "grok"])
def test_malformed_lines_go_to_dead_letters_and_valid_output_is_unchanged(spark, tmp_path, kind):
    rnd = random.Random(11)
    if kind == "jsonl":
        good = [json.dumps({"id": i, "user": f"u{i % 13}", "amount": round(rnd.uniform(0, 50), 2)}) for i in range(600)]
        text, bad, reason, stage = JSONL, BAD_JSON, "malformed json line", "src"
    else:
        good = list(access_lines(600, seed=3))
        text, bad, reason, stage = GROK, [g for g in GARBAGE if g.strip()], "no match for grok pattern", "parsed"
    dirty, inserted = interleave(good, bad, rnd)
    assert 0.07 < len(inserted) / len(good) < 0.13
    clean_rows, clean_dead = run(spark, tmp_path / "clean", text.format(tag="clean"), good)
    dirty_rows, dirty_dead = run(spark, tmp_path / "dirty", text.format(tag="dirty"), dirty)
    assert clean_dead == [] and len(clean_rows) > 100
    assert sorted(map(key, dirty_rows)) == sorted(map(key, clean_rows))
    assert sorted(d["payload"] for d in dirty_dead) == sorted(inserted)
    assert all(d["stage"] == stage and d["reason"].startswith(reason) for d in dirty_dead)
    assert all(d["pipeline"] == "bad-" + ("json" if kind == "jsonl" else "grok") + "-dirty" for d in dirty_dead)
