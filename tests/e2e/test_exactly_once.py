"""Exactly-once under crashes: a file-to-file pipeline is SIGKILLed (the whole process group: Python
driver, JVM, Python workers) at random moments, at least 5 times, and restarted each time. The
final output must equal the expected output exactly: nothing lost, nothing doubled.

Set ETL_E2E_SEED to replay a particular sequence of kill moments; ETL_E2E_KILLS to kill more runs (3 by default)."""

from __future__ import annotations

import json
import os
import random
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.runs import kill_group, start

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FILES = 30
LINES = 200
# driver runs killed before the one that finishes (each run is a new driver JVM: about 12 s of CPU); a soak run
# sets more: ETL_E2E_KILLS=20
KILLS = int(os.environ.get("ETL_E2E_KILLS", "3"))


def make_input(folder: Path) -> list[dict]:
    folder.mkdir(parents=True)
    expected = []
    for f in range(FILES):
        with open(folder / f"events-{f:03d}.jsonl", "w") as fh:
            for i in range(LINES):
                n = f * LINES + i
                fh.write(json.dumps({"id": n, "value": n % 97, "name": f"e{n}"}) + "\n")
                if n % 97 % 3 != 0:
                    expected.append({"id": n, "value": n % 97, "doubled": 2 * (n % 97), "name": f"e{n}"})
    return expected


PIPELINE = """\
    name: crash-test
    sources:
      - id: events
        type: file
        path: input
        format: jsonl
        schema: {id: bigint, value: bigint, name: string}
        max_files_per_trigger: 1
    transforms:
      - {id: kept, type: filter, input: events, expr: "value % 3 != 0"}
      - {id: out_rows, type: derive, input: kept, columns: {doubled: "value * 2"}}
    sinks:
      - {id: out, type: file, input: out_rows, path: output, format: jsonl, batch_size: 50}
    checkpoint: state/checkpoint
    trigger: {interval: 100ms}
"""


def output_rows(folder: Path) -> list[dict]:
    rows = []
    for f in sorted(folder.glob("part-*.jsonl")) if folder.exists() else []:
        rows.extend(json.loads(line) for line in f.read_text().splitlines() if line)
    return rows


def test_sigkill_loop_loses_and_doubles_nothing(tmp_path):
    seed = int(os.environ.get("ETL_E2E_SEED", random.randrange(1 << 30)))
    rnd = random.Random(seed)
    expected = make_input(tmp_path / "input")
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent(PIPELINE))
    out = tmp_path / "output"
    kills = []
    for k in range(KILLS):
        before = len(list(out.glob("part-*"))) if out.exists() else 0
        p = start(tmp_path)
        if k == 0:  # once while the JVM starts or the first batch runs
            time.sleep(rnd.uniform(1.0, 6.0))
        else:  # the others mid-stream: after this run wrote something, at a random moment
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and p.poll() is None:
                if (len(list(out.glob("part-*"))) if out.exists() else 0) > before:
                    break
                time.sleep(0.05)
            time.sleep(rnd.uniform(0.0, 1.5))
        finished = p.poll() is not None
        kill_group(p)
        kills.append((k, len(list(out.glob("part-*"))) if out.exists() else 0, finished))
    assert sum(1 for _, _, fin in kills if not fin) >= KILLS, f"runs ended before their kill: {kills} (seed {seed})"
    p = start(tmp_path)
    p.wait(timeout=600)
    assert p.returncode == 0, (tmp_path / "stderr.log").read_text(errors="replace")[-3000:]
    got = output_rows(out)
    counts = Counter(r["id"] for r in got)
    doubled = sorted(i for i, c in counts.items() if c > 1)
    missing = sorted({r["id"] for r in expected} - set(counts))
    assert not doubled and not missing, f"seed {seed}, kills {kills}: doubled {doubled[:10]}, missing {missing[:10]}"
    assert sorted(got, key=lambda r: r["id"]) == expected


WINDOW_PIPELINE = """\
    name: replay-test
    sources:
      - id: events
        type: file
        path: input
        format: jsonl
        schema: {ts: timestamp, key: string}
        max_files_per_trigger: 1
        event_time: {field: ts, watermark: 0s}
    transforms:
      - id: counts
        type: window
        input: events
        kind: tumbling
        size: 10s
        group_by: [key]
        aggregates: [{fn: count, as: n}]
    sinks:
      - {id: out, type: file, input: counts, path: output, format: jsonl}
    checkpoint: state/checkpoint
"""


def test_replayed_stateful_batch_that_the_sink_already_committed(tmp_path):
    """The crash window between a sink's commit and Spark's commit log: Spark replays the batch,
    the sink skips it, and the stateful query must still run on (Spark checks that every state
    store committed in a foreachBatch batch) with nothing written twice."""
    (tmp_path / "input").mkdir()
    for f in range(3):
        with open(tmp_path / "input" / f"events-{f}.jsonl", "w") as fh:
            for i in range(20):
                fh.write(json.dumps({"ts": f"2026-01-10T09:00:{f * 15 + i % 10:02d}Z", "key": f"k{i % 3}"}) + "\n")
        os.utime(tmp_path / "input" / f"events-{f}.jsonl", (1_700_000_000 + f, 1_700_000_000 + f))  # read in order
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent(WINDOW_PIPELINE))
    p = start(tmp_path)
    assert p.wait(timeout=600) == 0, (tmp_path / "stderr.log").read_text(errors="replace")[-3000:]
    first = sorted(output_rows(tmp_path / "output"), key=lambda r: (r["window_start"], r["key"]))
    # windows 09:00:00, :10 and :20 per key k0, k1, k2 (the :30 one stays open)
    assert [r["n"] for r in first] == [7, 7, 6, 3, 4, 3, 4, 3, 3]

    commits = [c for c in (tmp_path / "state").rglob("commits/*") if c.name.isdigit()]
    last = max(commits, key=lambda c: int(c.name))
    last.unlink()  # as if killed after the sink committed the batch and before Spark logged it
    (last.parent / f".{last.name}.crc").unlink(missing_ok=True)
    p = start(tmp_path)
    assert p.wait(timeout=600) == 0, (tmp_path / "stderr.log").read_text(errors="replace")[-3000:]
    assert last.exists()  # the batch was replayed and committed this time
    again = sorted(output_rows(tmp_path / "output"), key=lambda r: (r["window_start"], r["key"]))
    assert again == first
