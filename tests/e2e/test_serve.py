"""`etl serve FOLDER`: eleven pipelines (YAML and SQL, stateless and windowed) and a broken file run by one
process; files added, changed (valid and invalid) and removed while it runs, a job stopped and started with
`etl jobs`; then the process is SIGKILLed mid-batch and started again. Every job's file sink must hold exactly its
oracle's rows: nothing lost, nothing doubled across the restarts.

One serve process (and one more after the SIGKILL) for the whole folder: the figures are in the lead's report."""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.runs import kill_group

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BASE = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
FILES, ROWS = 3, 20  # per phase: files of rows; phase p's events are at [100 p, 100 p + 60) seconds
# stateless jobs: name -> (modulus, remainder) of `value` they keep; the SQL ones multiply value by 10
YAML_JOBS = {"y0": (2, 0), "y1": (3, 1), "y2": (5, 2), "y3": (4, 3), "y4": (3, 0), "y5": (7, 1)}
SQL_JOBS = {"s0": (2, 1), "s1": (5, 0), "s2": (6, 5)}
WINDOW_JOBS = ("w0", "wsql")  # a tumbling 10 s count per key: YAML, SQL
CHANGED, INVALID, REMOVED, STOPPED, ADDED = "y1", "y2", "y3", "s1", "added"
NEW_FILTER = (3, 2)  # CHANGED's filter from phase 2 on


def events(phase: int) -> list[dict]:
    out = []
    for f in range(FILES):
        for i in range(ROWS):
            n = phase * 1000 + f * ROWS + i
            ts = BASE + datetime.timedelta(seconds=phase * 100 + f * ROWS + i)
            out.append({"id": n, "value": (n * 7) % 23, "key": f"k{n % 3}", "ts": ts.isoformat()})
    return out


def write_phase(root: Path, phase: int) -> None:
    rows = events(phase)
    for f in range(FILES):
        tmp = root / "in" / f".p{phase}-{f}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows[f * ROWS:(f + 1) * ROWS]))
        tmp.rename(root / "in" / f"p{phase}-{f}.jsonl")  # whole, as the file source expects
        time.sleep(0.02)  # in time order by modification time too


def yaml_job(name: str, mod: int, rem: int) -> str:
    return f"""\
name: {name}
sources:
  - {{id: events, type: file, path: ../in, format: jsonl, schema: {{id: bigint, value: bigint, key: string, ts: timestamp}}}}
transforms:
  - {{id: kept, type: filter, input: events, expr: "value % {mod} = {rem}"}}
  - {{id: rows, type: derive, input: kept, columns: {{doubled: "value * 2"}}}}
sinks:
  - {{id: out, type: file, input: rows, path: ../out/{name}, format: jsonl}}
trigger: {{interval: 1s}}
"""


def sql_job(name: str, mod: int, rem: int) -> str:
    return f"""\
SET 'pipeline.name' = '{name}';
SET 'trigger.interval' = '1s';
CREATE TABLE events (id BIGINT, `value` BIGINT, `key` VARCHAR, ts TIMESTAMP(3))
WITH (type = 'file', filePath = '../../in', isJsonData = 'true');
CREATE TABLE out_rows (id BIGINT, v BIGINT) WITH (type = 'file', filePath = '../../out/{name}', format = 'json');
INSERT INTO out_rows SELECT id, `value` * 10 AS v FROM events WHERE MOD(`value`, {mod}) = {rem};
"""


WINDOW_YAML = """\
name: w0
sources:
  - id: events
    type: file
    path: ../in
    format: jsonl
    schema: {id: bigint, value: bigint, key: string, ts: timestamp}
    event_time: {field: ts, watermark: 0s}
transforms:
  - {id: counts, type: window, input: events, kind: tumbling, size: 10s, group_by: [key], aggregates: [{fn: count, as: n}]}
sinks:
  - {id: out, type: file, input: counts, path: ../out/w0, format: jsonl}
trigger: {interval: 1s}
"""

WINDOW_SQL = """\
SET 'pipeline.name' = 'wsql';
SET 'trigger.interval' = '1s';
CREATE TABLE events (id BIGINT, `value` BIGINT, `key` VARCHAR, ts TIMESTAMP(3),
                     WATERMARK FOR ts AS ts - INTERVAL '0' SECOND)
WITH (type = 'file', filePath = '../../in', isJsonData = 'true');
CREATE TABLE out_rows (`key` VARCHAR, window_start TIMESTAMP(3), n BIGINT)
WITH (type = 'file', filePath = '../../out/wsql', format = 'json');
INSERT INTO out_rows SELECT `key`, TUMBLE_START(ts, INTERVAL '10' SECOND) AS window_start, COUNT(*) AS n
FROM events GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), `key`;
"""

BROKEN = yaml_job("broken", 2, 0).replace("value % 2 = 0", "valeu % 2 = 0")


def make_folder(root: Path) -> None:
    (root / "in").mkdir()
    jobs = root / "jobs"
    (jobs / "sql").mkdir(parents=True)
    for name, (mod, rem) in YAML_JOBS.items():
        (jobs / f"{name}.yaml").write_text(yaml_job(name, mod, rem))
    for name, (mod, rem) in SQL_JOBS.items():
        (jobs / "sql" / f"{name}.sql").write_text(sql_job(name, mod, rem))
    (jobs / "w0.yaml").write_text(WINDOW_YAML)
    (jobs / "sql" / "wsql.sql").write_text(WINDOW_SQL)
    (jobs / "broken.yaml").write_text(BROKEN)


def stateless(rows: list[dict], mod: int, rem: int, sql: bool) -> list[tuple]:
    kept = [r for r in rows if r["value"] % mod == rem]
    return sorted((r["id"], r["value"] * 10) if sql else (r["id"], r["value"], r["key"], r["value"] * 2)
                  for r in kept)


def windows(rows: list[dict]) -> list[tuple]:
    """Tumbling 10 s counts per key of the windows the watermark (the latest event, no delay) closed."""
    latest = max(datetime.datetime.fromisoformat(r["ts"]) for r in rows)
    counts: Counter = Counter()
    for r in rows:
        t = datetime.datetime.fromisoformat(r["ts"])
        start = t - datetime.timedelta(seconds=t.second % 10, microseconds=t.microsecond)
        if start + datetime.timedelta(seconds=10) <= latest:
            counts[(r["key"], start)] += 1
    return sorted((k, s, n) for (k, s), n in counts.items())


def oracle(name: str, phases: dict[int, list[dict]]) -> list[tuple]:
    """The rows job `name` must have written once the given phases' events were read (phase -> its events)."""
    everything = [r for p in sorted(phases) for r in phases[p]]
    if name in WINDOW_JOBS:
        return windows(everything)
    if name == REMOVED:
        return stateless(phases[1], *YAML_JOBS[name], sql=False)
    if name == CHANGED:
        later = [r for p in sorted(phases) if p > 1 for r in phases[p]]
        return sorted(stateless(phases[1], *YAML_JOBS[name], sql=False) + stateless(later, *NEW_FILTER, sql=False))
    if name == ADDED:
        return stateless(everything, 5, 1, sql=False)
    sql = name in SQL_JOBS
    return stateless(everything, *(SQL_JOBS[name] if sql else YAML_JOBS[name]), sql=sql)


def written(root: Path, name: str) -> list[tuple]:
    rows = []
    for f in sorted((root / "out" / name).glob("part-*.jsonl")):
        rows.extend(json.loads(line) for line in f.read_text().splitlines() if line)
    if name == "w0":
        return sorted((r["key"], _when(r["window_start"]), r["n"]) for r in rows)
    if name == "wsql":
        return sorted((r["key"], _when(r["window_start"]), r["n"]) for r in rows)
    if name in SQL_JOBS:
        return sorted((r["id"], r["v"]) for r in rows)
    return sorted((r["id"], r["value"], r["key"], r["doubled"]) for r in rows)


def _when(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def serve(root: Path) -> subprocess.Popen:
    log = open(root / "serve.log", "ab")  # noqa: SIM115 - the child's stderr for its whole life
    return subprocess.Popen([sys.executable, "-m", "etl", "serve", "jobs", "--conf", "spark.ui.enabled=false",
                             "--set", "ETL_SERVE_POLL_S=0.5"], cwd=root, stdout=subprocess.DEVNULL, stderr=log,
                            start_new_session=True)


def etl_jobs(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "etl", "jobs", *args, "--folder", "jobs"], cwd=root,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "ETL_NO_SPARK": "on"})


def wait_for(what: str, ok, p: subprocess.Popen, root: Path, timeout: float = 400) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        assert p.poll() is None, f"etl serve ended ({p.returncode}) waiting for {what}: " + _log(root)
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: " + _log(root))


def _log(root: Path) -> str:
    return (root / "serve.log").read_text(errors="replace")[-4000:]


def all_equal(root: Path, names: list[str], phases: dict[int, list[dict]]) -> bool:
    return all(written(root, n) == oracle(n, phases) for n in names)


def test_serve_folder_hot_changes_jobs_commands_and_sigkill_exactly_once(tmp_path):
    root = tmp_path
    make_folder(root)
    phases = {1: events(1)}
    write_phase(root, 1)
    jobs = [*YAML_JOBS, *SQL_JOBS, *WINDOW_JOBS]
    p = serve(root)
    try:
        wait_for("phase 1 in every job", lambda: all_equal(root, jobs, phases), p, root)
        log = _log(root)
        assert "jobs/broken.yaml:5:52: E310 unknown column 'valeu' in transform 'kept' (expr)" in log
        assert "etl serve: " + str(root / "jobs" / "broken.yaml") + ": not started" in log
        listed = etl_jobs(root, "list", "--format", "json")
        assert listed.returncode == 0, listed.stderr
        listing = json.loads(listed.stdout)["jobs"]
        states = {j["name"] or j["file"]: j["state"] for j in listing}
        assert states == {**{n: "running" for n in jobs}, str(root / "jobs" / "broken.yaml"): "invalid"}
        # each job's tasks ran in its own FAIR pool (Spark makes a pool when its first tasks are scheduled)
        assert {j["name"]: j["pool"] for j in listing if j["name"]} == {n: n for n in jobs}
        # per-job metrics on the set's endpoint (each series labelled with its job), etl top of one job's file
        run = json.loads((root / "jobs" / ".etl" / "@serve" / "run.json").read_text())
        request = urllib.request.Request(run["address"] + "/metrics", headers={
            "Authorization": "Bearer " + Path(run["token_file"]).read_text().strip()})

        def counted() -> bool:  # (a batch's progress event reaches the metrics after its sink wrote it)
            with urllib.request.urlopen(request, timeout=30) as r:
                metrics = r.read().decode()
            return all(re.search(rf'^etl_batches_total{{pipeline="{n}",query="[^"]+"}} [1-9]', metrics, re.M)
                       for n in jobs)

        wait_for("every job's batches in the metrics", counted, p, root, timeout=60)
        top = subprocess.run([sys.executable, "-m", "etl", "top", "jobs/y0.yaml", "--iterations", "1"], cwd=root,
                             capture_output=True, text=True, timeout=120, env={**os.environ, "ETL_NO_SPARK": "on"})
        assert top.returncode == 0 and "kept" in top.stdout, top.stdout + top.stderr
        table = etl_jobs(root, "list")
        assert table.stdout.splitlines()[0].split() == ["NAME", "STATE", "BATCHES", "SINCE", "FILE"]
        assert [ln.split()[:2] for ln in table.stdout.splitlines()[1:12]] == \
            [[n, "running"] for n in sorted(jobs)]

        # hot changes: one valid, one invalid, one removed, one added; one job stopped by name
        changed = root / "jobs" / f"{CHANGED}.yaml"
        changed.write_text(yaml_job(CHANGED, *YAML_JOBS[CHANGED]).replace(
            "value % 3 = 1", "value % {} = {}".format(*NEW_FILTER)))
        invalid = root / "jobs" / f"{INVALID}.yaml"
        invalid.write_text(yaml_job(INVALID, *YAML_JOBS[INVALID]).replace("derive", "derivee"))
        (root / "jobs" / f"{REMOVED}.yaml").unlink()
        (root / "jobs" / "sql" / "added.yaml").write_text(yaml_job(ADDED, 5, 1).replace("../", "../../"))
        wait_for("the changes", lambda: all(m in _log(root) for m in (
            f"etl serve: {CHANGED}: {changed} changed and valid: restarting the job from its checkpoint",
            f"etl serve: {INVALID}: {invalid} changed but cannot run: the running version",
            f"etl serve: {REMOVED}: {root / 'jobs' / (REMOVED + '.yaml')} removed: stopping the job",
            f"etl serve: {ADDED}: {root / 'jobs' / 'sql' / 'added.yaml'}: starting")), p, root)
        stopped = etl_jobs(root, "stop", STOPPED)
        assert (stopped.returncode, stopped.stdout) == (0, f"etl jobs: stop {STOPPED}: stopped\n"), stopped.stderr
        missing = etl_jobs(root, "stop", "nosuchjob")
        assert missing.returncode == 1 and "etl jobs: stop nosuchjob: no job named 'nosuchjob'" in missing.stderr
        states = {j["name"]: j["state"] for j in json.loads(etl_jobs(root, "list", "--format", "json").stdout)["jobs"]
                  if j["name"]}
        assert states == {**{n: "running" for n in jobs if n not in (REMOVED, STOPPED)}, STOPPED: "stopped",
                          ADDED: "running"}
        wait_for("phase 1 in the added job", lambda: written(root, ADDED) == oracle(ADDED, phases), p, root)
        started = etl_jobs(root, "start", STOPPED)
        assert (started.returncode, started.stdout) == (0, f"etl jobs: start {STOPPED}: running\n"), started.stderr

        phases[2] = events(2)
        write_phase(root, 2)
        live = [n for n in jobs if n != REMOVED] + [ADDED]
        wait_for("phase 2", lambda: all_equal(root, live + [REMOVED], phases), p, root)

        # SIGKILL mid-batch: as soon as a phase-3 row is written anywhere
        phases[3] = events(3)
        write_phase(root, 3)
        first3 = min(r["id"] for r in phases[3])
        wait_for("a phase-3 row", lambda: any(r[0] >= first3 for n in live if n not in WINDOW_JOBS
                                              for r in written(root, n)), p, root)
    finally:
        kill_group(p)
    invalid.write_text(yaml_job(INVALID, *YAML_JOBS[INVALID]))  # a new start needs it valid again
    p = serve(root)
    try:
        wait_for("phase 3 after the restart", lambda: all_equal(root, live + [REMOVED], phases), p, root)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=120) == 0, _log(root)
    finally:
        kill_group(p)
    assert "Traceback" not in _log(root)
