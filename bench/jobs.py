#!/usr/bin/env python3
"""Many rule jobs: one `etl serve FOLDER` process against one `etl run` process per job, side by side.

    .venv/bin/python bench/jobs.py [--jobs 30] [--events 200000] [--sides serve,runs] [--steady S]

Each job: a generator source of --events command-line events (bench/window.py's fields, its own seed) -> a
`filter` of 41 rules (bench/light.py's: 31 regexes and 10 LIKE patterns over `cmd`, drop mode) -> jsonl files.
(serve) the --jobs pipelines in one folder, `etl serve FOLDER --once --progress json`: one JVM, FAIR pools;
(runs) the same pipelines, each `etl run PIPELINE --once --progress json` in its own process, all at once.

Both sides are sampled every 100 ms (bench/light.py's Sampler: the resident memory of the whole process tree,
driver, JVM and Python workers; peak_rss_mb is the largest sum). events_per_s = all the jobs' events / the span
from the first micro-batch's start to the last job's end (its summary line; the JVM start-ups before the first
batch are not in it, `wall_s` is the whole command). Last line per side:

    jobs side=serve jobs=N events_per_s=X peak_rss_mb=Y wall_s=Z

--steady S: the jobs as rule jobs run, unbounded (no `count`; --rate events per second each, the generator's
pacing) and all alive at once: each side is stopped (SIGTERM, a graceful stop) S seconds after its last job's first
micro-batch; events_per_s = the events of the micro-batches that ended in those S seconds / S. (With `count` and
--once the first jobs end before the last ones start: the peak is then that of fewer jobs.) `by_kind` is the
peak's process tree by kind: [processes, RSS MB, PSS MB] of the JVM, the driver, Spark's Python streaming source
runners (one per query of a Python data source) and its Python worker pools (bench/light.py's kind());
`most_procs` the most processes of each kind in one sample of the whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.light import Sampler, rules_json, tree_kinds  # noqa: E402 - after the sys.path insert above
from bench.window import CMDS  # noqa: E402

PIPELINE = """\
    name: rules-{i:02d}
    sources:
      - id: events
        type: generator
        count: {count}
        rate: {rate}
        seed: {i}
        rows_per_batch: {batch}
        fields:
          ts: {{timestamp: event}}
          id: {{sequence: 0}}
          cmd: {{choice: {cmds}}}
    transforms:
      - id: clean
        type: filter
        input: events
        mode: drop
        rules: {rules}
    sinks:
      - {{id: out, type: file, input: clean, path: {out}, format: jsonl}}
    checkpoint: {checkpoint}
"""


def write_jobs(work: Path, jobs: int, events: int | None, batch: int, rate: int = 20_000) -> list[Path]:
    """The jobs' pipelines (`events` None: unbounded generators)."""
    folder = work / "jobs"
    folder.mkdir(parents=True)
    rules = rules_json()
    files = []
    for i in range(jobs):
        f = folder / f"rules-{i:02d}.yaml"
        text = textwrap.dedent(PIPELINE).format(i=i, count=events, rate=rate, batch=batch, cmds=json.dumps(CMDS),
                                                rules=rules, out=work / "out" / f"rules-{i:02d}",
                                                checkpoint=work / "state" / f"rules-{i:02d}" / "checkpoint")
        f.write_text(text if events is not None else text.replace("    count: None\n", ""))
        files.append(f)
    return files


def measure(cmd: str, cwd: Path, jobs: int, events: int, steady: float = 0) -> dict[str, object]:
    """Run `cmd` (a shell line; every etl in it prints JSON progress on stderr) and sample its process tree;
    `steady`: stop it that many seconds after every job's first micro-batch (see --steady)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    sampler = Sampler(p.pid)
    sampler.start()
    records: list[tuple[float, dict]] = []
    ends: list[float] = []  # when each job's last line came: `etl run`'s summary, `etl serve`'s list of jobs done
    done = 0
    tail: list[str] = []
    alive: set[str] = set()
    window: list[float] = []  # steady: [the last job's first batch, the stop]

    def stop() -> None:  # every etl process (not their JVMs: etl stops its own): a graceful stop
        window.append(time.monotonic())
        for pid, what, _, _ in tree_kinds(p.pid):
            if what == "driver":
                os.kill(pid, signal.SIGTERM)

    assert p.stderr is not None
    for line in p.stderr:
        if line.startswith("{"):
            records.append((time.monotonic(), json.loads(line)))
            alive.add(records[-1][1]["pipeline"])
            if steady and not window and len(alive) == jobs:
                window.append(time.monotonic())
                threading.Timer(steady, stop).start()
        elif re.match(r"etl run: rules-\d+: .* read \d+ rows", line):
            ends.append(time.monotonic())
            done += 1
        elif re.match(r"etl serve: .*: \d+ job\(s\): ", line):
            ends.append(time.monotonic())
            done += line.count("=done")
        else:
            tail = (tail + [line])[-40:]
    p.wait()
    wall = time.monotonic() - t0
    sampler.done.set()
    sampler.join()
    busy = [(t, r) for t, r in records if r["input_rows"]]
    by_kind = sampler.by_kind()
    common = {"wall_s": wall, "peak_rss_mb": sampler.peak[0] / 2**20, "peak_pss_mb": sampler.peak_pss / 2**20,
              "by_kind": by_kind, "most_procs": sampler.most}
    if steady:
        if p.returncode != 0 or len(window) < 2 or not busy:
            raise SystemExit(f"{cmd[:80]}...: exit {p.returncode}, {len(alive)} of {jobs} jobs ran, stopped "
                             f"{len(window) == 2}, {len(busy)} busy batches:\n{''.join(tail)}")
        inside = [r["input_rows"] for t, r in busy if window[0] < t <= window[1]]
        return {"events": sum(inside), "events_per_s": sum(inside) / (window[1] - window[0]),
                "span_s": window[1] - window[0], "batches": len(inside), **common}
    if p.returncode != 0 or done != jobs or not busy:
        raise SystemExit(f"{cmd[:80]}...: exit {p.returncode}, {done} of {jobs} jobs done:\n{''.join(tail)}")
    # from the first micro-batch's start to the last job's end (a progress event Spark had not delivered when its
    # job ended is not printed: the events are counted from the generators' counts, not from the records)
    start = min(t - r["duration_ms"] / 1000 for t, r in busy)
    span = max(ends) - start
    return {"events": events, "events_per_s": events / span, "span_s": span, "batches": len(busy),
            "events_in_records": sum(r["input_rows"] for _, r in busy), **common}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=30, help="rule jobs (pipelines)")
    ap.add_argument("--events", type=int, default=200_000, help="events per job")
    ap.add_argument("--batch", type=int, default=50_000, help="generator rows per micro-batch")
    ap.add_argument("--sides", default="serve,runs", help="serve, runs or both (comma-separated)")
    ap.add_argument("--profile", default="light", help="the --profile of every process ('' for none)")
    ap.add_argument("--steady", type=float, default=0, metavar="S",
                    help="unbounded jobs, stopped S seconds after all of them ran a micro-batch")
    ap.add_argument("--rate", type=int, default=20_000, help="events per second of each job's generator")
    ap.add_argument("--conf", action="append", default=[], help="a Spark setting of every process (repeatable)")
    args = ap.parse_args()
    etl = shlex.quote(sys.executable) + " -m etl"
    profile = f" --profile {args.profile}" if args.profile else ""
    profile += "".join(f" --conf {shlex.quote(c)}" for c in args.conf)
    for side in args.sides.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"etl-bench-jobs-{side}-"))
        try:
            files = write_jobs(work, args.jobs, None if args.steady else args.events, args.batch, args.rate)
            once = "" if args.steady else " --once"
            if side == "serve":
                cmd = f"{etl} serve jobs{once} --progress json{profile}"
            else:
                cmd = " & ".join(f"{etl} run {shlex.quote(str(f))}{once} --progress json{profile}"
                                 for f in files) + " & wait"
            m = measure(cmd, work, args.jobs, args.jobs * args.events, args.steady)
            print(json.dumps({"side": side, "jobs": args.jobs, "load": os.getloadavg()[0],
                              **{k: round(v, 1) if isinstance(v, float) else v for k, v in m.items()}}))
            print(f"jobs side={side} jobs={args.jobs} events_per_s={m['events_per_s']:.0f} "
                  f"peak_rss_mb={m['peak_rss_mb']:.0f} peak_pss_mb={m['peak_pss_mb']:.0f} wall_s={m['wall_s']:.1f}",
                  flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
