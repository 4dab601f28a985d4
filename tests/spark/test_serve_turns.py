"""etl serve's fair turns on the session-wide Spark session: three jobs, one named to sort last, one turn (the set
of `--profile light`: one task slot) for the session's two slots. Every micro-batch of every job runs in a turn,
one at a time; once the three are under way, a turn freed goes to a job waiting (no job runs twice in a row while
another waits, whatever its name); each job's sink holds exactly its rows."""

from __future__ import annotations

import json

import pytest

from etl.commands.serve import _checker, job_files
from etl.runtime.jobs import JobSet, JobsOptions

pytestmark = pytest.mark.spark

NAMES = ("a", "m", "zz")
FILES = 4  # one micro-batch each (max_files_per_trigger: 1)

JOB = """\
name: {name}
sources:
  - {{id: events, type: file, path: ../in, format: jsonl, schema: {{id: bigint}}, max_files_per_trigger: 1}}
sinks:
  - {{id: out, type: file, input: events, path: ../out/{name}, format: jsonl}}
checkpoint: ../state/{name}
"""


def test_one_turn_is_shared_by_the_jobs_whatever_their_names(spark, tmp_path):
    (tmp_path / "in").mkdir()
    for f in range(FILES):
        (tmp_path / "in" / f"{f}.jsonl").write_text("".join(json.dumps({"id": 10 * f + i}) + "\n" for i in range(3)))
    folder = tmp_path / "jobs"
    folder.mkdir()
    for n in NAMES:
        (folder / f"{n}.yaml").write_text(JOB.format(name=n))
    said: list[str] = []
    js = JobSet(spark, JobsOptions(files=lambda: job_files(folder), check=_checker({}, (), None), echo=said.append,
                                   needed=lambda g: (), once=True, slots=lambda: 1))
    grants: list[tuple[str, frozenset[str], int]] = []  # (job granted, jobs waiting then, turns held then)
    grant = js.turns._grant

    def logged() -> None:
        before = {id(t) for t in js.turns._held}
        grant()
        for t in js.turns._held:
            if id(t) not in before:
                grants.append((t.job, frozenset(w.job for w in js.turns._waiting), len(js.turns._held)))

    js.turns._grant = logged  # type: ignore[method-assign]
    js.sync()
    for j in list(js.jobs.values()):
        j.thread.join(120)
    assert {n: j.state for n, j in js.jobs.items()} == {n: "done" for n in NAMES}, said
    for n in NAMES:
        rows = [json.loads(line)["id"] for f in (tmp_path / "out" / n).glob("part-*.jsonl")
                for line in f.read_text().splitlines()]
        assert sorted(rows) == [10 * f + i for f in range(FILES) for i in range(3)], n
    assert [g[0] for g in grants].count("zz") == FILES and len(grants) == FILES * len(NAMES)
    assert max(held for _, _, held in grants) == 1  # one batch at a time although Spark has two slots
    seen: set[str] = set()
    for (job, waiting, _), (before, _, _) in zip(grants[1:], grants, strict=False):
        seen.add(before)
        if seen == set(NAMES) and waiting - {job}:
            assert job != before, grants  # another job's batch was waiting: it took the turn
    assert js.turns._held == js.turns._waiting == []
