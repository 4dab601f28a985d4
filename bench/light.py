#!/usr/bin/env python3
"""Light mode measured: `etl run --profile light` on one core, resident memory of the whole process tree.

    .venv/bin/python bench/light.py [--events 1000000] [--lines 300000]

Two pipelines, each one `etl run --once --profile light` in a child process pinned to one CPU
(sched_setaffinity, inherited by the JVM and the Python workers):

(quickstart) pipelines/quickstart.yaml as shipped (grok, derive, filter, 1-minute window, console + jsonl),
    over --lines generated access-log lines (the shipped sample's lines, one second of event time apart);
(rules) a file of --events JSON command-line events -> a `filter` of 41 rules in the spirit of RocketMQ
    Streams' security scenario (31 regexes and 10 LIKE patterns over `cmd`, drop mode) -> a tumbling
    10 s window counting events per host -> jsonl.

Every 100 ms the bench sums the resident memory (Rss of /proc/PID/smaps_rollup; the tree found with psutil
when installed, else from /proc) of the child and every process below it (the driver, the JVM, the Python daemon and workers); peak_rss_mb is the largest
sum. Summed RSS counts pages shared by forked workers once per process (pss_mb, from smaps_rollup, counts them
once). events_per_s = events / the span from the first micro-batch's start to the last one's end (Spark's
progress: the JVM's start-up and etl's compile are not in it; `wall_s` is the whole command); cpu_s = the CPU
time the tree used in that span, and events / cpu_s (`idle_core_events_per_s`) is what the run reaches on a core
of its own when the machine is shared. Last line: the rules pipeline (the RocketMQ Streams comparison) and the
peak of both runs:

    light events_per_s=X peak_rss_mb=Y cores=1

--size-guard N: the rules pipeline N times with the file source's record checks (etl/jvm/BoundedLines.java: the
maximum record size, valid UTF-8, no lone surrogate; etl.compile.deadletter.within_record_size on the other
formats) and N times without them, alternating, in one invocation. Off is this bench's alone: the child `etl run`
is started with those checks patched out in its process (no setting turns a safety guard off). Last line (medians):

    light size_guard=on events=N guarded_cpu_s=A unguarded_cpu_s=B cpu_ratio=B/A guarded_s=C unguarded_s=D
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from collections import Counter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.window import CMDS, PATTERNS  # noqa: E402 - after the sys.path insert above

LIKES = ["%/etc/sudoers%", "%.ssh/authorized_keys%", "%curl %|%bash%", "%wget %-O-%", "%/tmp/.%",
         "%nohup %&%", "%--no-check-certificate%", "%chmod 777 %", "%/bin/sh -c %", "%useradd %"]
RULES = PATTERNS[:31]
HOSTS = [f"host-{i:02d}" for i in range(50)]
RULES_PIPELINE = """\
    name: light-rules
    sources:
      - {{id: events, type: file, path: {data}, format: jsonl,
         schema: {{ts: timestamp, host: string, user: string, cmd: string}},
         event_time: {{field: ts, watermark: 5s}}}}
    transforms:
      - id: clean
        type: filter
        input: events
        mode: drop
        rules: {rules}
      - id: per_host
        type: window
        input: clean
        kind: tumbling
        size: 10s
        group_by: [host]
        aggregates: [{{fn: count, as: n}}]
    sinks:
      - {{id: out, type: file, input: per_host, path: {out}, format: jsonl}}
    checkpoint: {checkpoint}
"""


def rules_json() -> str:
    rules = [{"id": f"re{i:02d}", "when": {"field": "cmd", "regex": p, "caseless": i % 3 == 0}}
             for i, p in enumerate(RULES)]
    rules += [{"id": f"like{i:02d}", "when": {"field": "cmd", "like": p}} for i, p in enumerate(LIKES)]
    assert len(rules) == 41
    return json.dumps(rules)


def write_events(path: Path, n: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    base = datetime.datetime(2026, 1, 10, 12, 0, tzinfo=datetime.UTC).timestamp()
    with open(path, "w") as fh:
        for i in range(n):
            ts = datetime.datetime.fromtimestamp(base + i / 20_000, datetime.UTC)
            fh.write(json.dumps({"ts": ts.isoformat().replace("+00:00", "Z"), "host": rng.choice(HOSTS),
                                 "user": f"u{rng.randrange(200)}", "cmd": rng.choice(CMDS)}) + "\n")


def write_access_log(path: Path, n: int) -> None:
    sample = (ROOT / "pipelines" / "data" / "access.log").read_text().splitlines()
    base = datetime.datetime(2026, 1, 10, 12, 0, tzinfo=datetime.UTC)
    with open(path, "w") as fh:
        for i in range(n):
            line = sample[i % len(sample)]
            start, end = line.index("[") + 1, line.index("]")
            stamp = (base + datetime.timedelta(seconds=i)).strftime("%d/%b/%Y:%H:%M:%S +0000")
            fh.write(f"{line[:start]}{stamp}{line[end:]}\n")


# ------------------------------------------------------------------------------ resident memory of a tree
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    return kids


def tree_pids(root: int) -> list[int]:
    try:
        import psutil  # type: ignore[import-not-found]
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            top = psutil.Process(root)
            return [root, *(c.pid for c in top.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []
    kids, pids, todo = _children(), [], [root]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo.extend(kids.get(p, []))
    return pids


TICK = os.sysconf("SC_CLK_TCK")


def kind(pid: int, comm: str) -> str:
    """What a process of the tree is: jvm, driver (etl's Python), source runner (Spark's Python streaming source
    runner: one per query of a Python data source, for the query's life), python workers (Spark's daemons and the
    workers they fork, per module), else its command name."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = [c.decode(errors="replace") for c in fh.read().split(b"\0") if c]
    except OSError:
        return comm
    if comm == "java":
        return "jvm"
    if "pyspark.daemon" in cmd:
        return f"python workers ({cmd[-1].rsplit('.', 1)[-1]})"
    if "pyspark.sql.streaming.python_streaming_source_runner" in cmd:
        return "source runner"
    return "driver" if "etl" in cmd[1:3] else comm


def tree_kinds(root: int) -> list[tuple[int, str, int, int]]:
    """(pid, kind, RSS bytes, PSS bytes) of `root` and every process below it."""
    return [(pid, what, rss, pss) for pid, what, rss, pss, _ in _tree(root)]


def _tree(root: int) -> list[tuple[int, str, int, int, float]]:
    out = []
    for pid in tree_pids(root):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                head, rest = fh.read().rsplit(")", 1)
            f = rest.split()
            cpu = sum(int(x) for x in f[11:15]) / TICK
            comm = head.split("(", 1)[1]
            if comm != "java" and os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "java":
                continue  # a JVM's child between its spawn and its exec: the JVM's memory, not counted twice
            rss = pss = 0
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Rss:"):
                        rss = int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss = int(line.split()[1]) * 1024
            out.append((pid, kind(pid, comm), rss, pss, cpu))
        except (OSError, IndexError, ValueError):
            continue
    return out


def tree_sample(root: int) -> tuple[int, int, float, list[tuple[str, int, int]]]:
    """(RSS bytes, PSS bytes, CPU seconds so far, [(kind, RSS bytes, PSS bytes)]) of `root` and every process below
    it; the CPU seconds include those of reaped children (cutime, cstime)."""
    tree = _tree(root)
    return (sum(t[2] for t in tree), sum(t[3] for t in tree), sum(t[4] for t in tree),
            [(what, rss, pss) for _, what, rss, pss, _ in tree])


class Sampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.1):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak = (0, 0)
        self.peak_procs: list[tuple[str, int, int]] = []
        self.peak_pss = 0
        self.most: dict[str, int] = {}  # kind -> the most processes of that kind in one sample of the whole run
        self.cpu: list[tuple[float, float]] = []  # (monotonic time, tree CPU seconds)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            rss, pss, cpu, procs = tree_sample(self.pid)
            self.cpu.append((time.monotonic(), cpu))
            if rss > self.peak[0]:
                self.peak, self.peak_procs = (rss, pss), procs
            self.peak_pss = max(self.peak_pss, pss)
            for k, n in Counter(k for k, _, _ in procs).items():
                self.most[k] = max(self.most.get(k, 0), n)
            self.done.wait(self.every)

    def by_kind(self) -> dict[str, list[int]]:
        """At the peak: kind -> [processes, RSS MB, PSS MB]."""
        kinds: dict[str, list[int]] = {}
        for k, r, p in self.peak_procs:
            row = kinds.setdefault(k, [0, 0, 0])
            row[0] += 1
            row[1] += round(r / 2**20)
            row[2] += round(p / 2**20)
        return dict(sorted(kinds.items(), key=lambda kv: -kv[1][1]))

    def cpu_at(self, t: float) -> float:
        """Tree CPU seconds at time t (the last sample before it)."""
        before = [c for when, c in self.cpu if when <= t]
        return before[-1] if before else 0.0


# ------------------------------------------------------------------------------------------------ a run
# `etl run` without the file source's record checks (--size-guard's other side): the reader is not asked for them
# (BoundedLines: etlMaxRecordBytes 0 checks nothing) and the guard of the other formats passes its frame through
UNGUARDED = """\
import runpy, sys
import etl.components.sources.file.build as f
checked = f.checked
f.checked = lambda reader: checked(reader).option("etlMaxRecordBytes", "0")
def unguarded(shared, cap, columns=None, failed=None):  # the reader's own reasons only (guarded_rows' `failed`)
    from pyspark.sql import functions as F
    from etl.dead_letters import ERR
    err = None
    for cond, why in failed or []:
        err = F.when(cond, why) if err is None else err.when(cond, why)
    return shared if err is None else shared.withColumn(ERR, err)
f.within_record_size = unguarded
sys.argv = ["etl"] + sys.argv[1:]
runpy.run_module("etl", run_name="__main__")
"""


def run(pipeline: Path, cwd: Path, cpu: int, events: int, guard: bool = True) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, *(["-m", "etl"] if guard else ["-c", UNGUARDED]), "run", str(pipeline),
                          "--once", "--profile", "light", "--progress", "json"], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, start_new_session=True,
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))  # noqa: PLW1509 - no thread yet
    sampler = Sampler(p.pid)
    sampler.start()
    records: list[tuple[float, dict]] = []  # (when the bench read it, etl's progress record)
    tail: list[str] = []
    assert p.stderr is not None
    for line in p.stderr:
        if line.startswith("{"):
            records.append((time.monotonic(), json.loads(line)))
        else:
            tail = (tail + [line])[-50:]
    p.wait()
    wall = time.monotonic() - t0
    sampler.done.set()
    sampler.join()
    if p.returncode != 0:
        raise SystemExit(f"{pipeline.name}: etl run failed ({p.returncode}):\n{''.join(tail)}")
    busy = [(t, r) for t, r in records if r["input_rows"]]
    # a record is printed when its batch ends: the span runs from the first batch's start to the last one's end
    start = min(t - r["duration_ms"] / 1000 for t, r in busy)
    span = busy[-1][0] - start
    cpu = sampler.cpu_at(busy[-1][0] + 0.1) - sampler.cpu_at(start)
    return {"events": events, "events_per_s": events / span, "span_s": span, "wall_s": wall, "cpu_s": cpu,
            "events_per_cpu_s": events / cpu if cpu else float("nan"),
            "peak_rss_mb": sampler.peak[0] / 2**20, "pss_at_peak_mb": sampler.peak[1] / 2**20,
            "peak_pss_mb": sampler.peak_pss / 2**20, "samples": len(sampler.cpu), "batches": len(busy),
            "queries": ", ".join(f"{q} {sum(r['duration_ms'] for _, r in busy if r['query'] == q) / 1000:.1f} s"
                                 for q in dict.fromkeys(r["query"] for _, r in busy)),
            "procs": ", ".join(f"{n} {r / 2**20:.0f}" for n, r, _ in sorted(sampler.peak_procs, key=lambda x: -x[1]))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="events of the 41-rule pipeline")
    ap.add_argument("--lines", type=int, default=300_000, help="access-log lines of the quickstart")
    ap.add_argument("--only", choices=("quickstart", "rules"), default=None, help="run one of the two pipelines")
    ap.add_argument("--cpu", type=int, default=None, help="the CPU to pin the run to (default: the last one)")
    ap.add_argument("--size-guard", type=int, default=0, metavar="N",
                    help="the rules pipeline N times with the record checks and N times without, alternating")
    args = ap.parse_args()
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="etl-bench-light-"))
    try:
        (work / "pipelines" / "data").mkdir(parents=True)
        shutil.copy(ROOT / "pipelines" / "quickstart.yaml", work / "pipelines")
        write_access_log(work / "pipelines" / "data" / "access.log", args.lines)
        quick = (run(work / "pipelines" / "quickstart.yaml", work, cpu, args.lines)
                 if args.only != "rules" and not args.size_guard else None)
        if args.only == "quickstart":
            _report(quick, None, 0, cpu)
            return
        (work / "rules").mkdir()
        write_events(work / "rules" / "events.jsonl", args.events)
        if args.size_guard:
            _size_guard(work, cpu, args.events, args.size_guard)
            return
        (work / "rules.yaml").write_text(textwrap.dedent(RULES_PIPELINE.format(
            data=work / "rules", out=work / "rules_out", checkpoint=work / "rules_ckpt", rules=rules_json())))
        rules = run(work / "rules.yaml", work, cpu, args.events)
        counted = sum(json.loads(x)["n"] for f in (work / "rules_out").glob("*.jsonl") for x in f.read_text().splitlines())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _report(quick, rules, counted, cpu)


def _size_guard(work: Path, cpu: int, events: int, repeat: int) -> None:
    import statistics

    got: dict[bool, list[dict]] = {True: [], False: []}
    for r in range(repeat):
        for guard in ((True, False) if r % 2 == 0 else (False, True)):
            name = f"rules_{r}_{int(guard)}"
            (work / f"{name}.yaml").write_text(textwrap.dedent(RULES_PIPELINE.format(
                data=work / "rules", out=work / f"{name}_out", checkpoint=work / f"{name}_ckpt", rules=rules_json())))
            res = run(work / f"{name}.yaml", work, cpu, events, guard)
            got[guard].append(res)
            print(f"round {r + 1} {'guarded' if guard else 'unguarded'}: span {res['span_s']:.2f} s, "
                  f"{res['cpu_s']:.2f} CPU-s", flush=True)
    med = {g: (statistics.median(x["cpu_s"] for x in v), statistics.median(x["span_s"] for x in v))
           for g, v in got.items()}
    (gc, gs), (uc, us) = med[True], med[False]
    print(f"light size_guard=on events={events} guarded_cpu_s={gc:.2f} unguarded_cpu_s={uc:.2f} "
          f"cpu_ratio={uc / gc:.3f} guarded_s={gs:.2f} unguarded_s={us:.2f} ratio={us / gs:.3f} "
          f"loadavg={os.getloadavg()[0]:.1f}")


def _report(quick: dict | None, rules: dict | None, counted: int, cpu: int) -> None:
    for name, r in (("quickstart", quick), ("rules41", rules)):
        if r is None:
            continue
        print(f"{name}: events={r['events']:,} events_per_s={r['events_per_s']:,.0f} span_s={r['span_s']:.1f} "
              f"wall_s={r['wall_s']:.1f} cpu_s={r['cpu_s']:.1f} events_per_cpu_s={r['events_per_cpu_s']:,.0f} "
              f"batches={r['batches']} (batch time per query: {r['queries']}) peak_rss_mb={r['peak_rss_mb']:.0f} (pss {r['pss_at_peak_mb']:.0f}; peak pss "
              f"{r['peak_pss_mb']:.0f}; MB per process at the peak: {r['procs']}; {r['samples']} samples)", flush=True)
    main_run = rules or quick
    assert main_run is not None
    if rules is not None:
        print(f"rules41: events kept and counted in closed windows={counted:,}")
    # on a shared, busy CPU the span stretches; events per CPU-second of the tree is what one idle core reaches
    print(f"cpu={cpu} loadavg={os.getloadavg()[0]:.1f} idle_core_events_per_s={main_run['events_per_cpu_s']:.0f}")
    peak = max(r["peak_rss_mb"] for r in (quick, rules) if r is not None)
    print(f"light events_per_s={main_run['events_per_s']:.0f} peak_rss_mb={peak:.0f} cores=1")


if __name__ == "__main__":
    main()
