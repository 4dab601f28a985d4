#!/usr/bin/env python3
"""The fixed cost of a micro-batch: etl against a plain PySpark foreachBatch query, side by side in one process.

    .venv/bin/python bench/batch_cost.py [--batches 20] [--rows 10] [--repeat 3] [--profile FILE]

Both read the same files, one file a micro-batch (etl: `max_files_per_trigger: 1`; Spark: `maxFilesPerTrigger`),
keep the rows of one level (etl: a filter's `expr`; Spark: `DataFrame.filter`) and write them as JSON lines (etl:
its file sink, exactly-once, with its dead letters; Spark: `df.write.mode("append").json(...)` in foreachBatch).
Two inputs: `small`, --batches files of --rows JSON lines, and `empty`, --batches empty files (a micro-batch of
0 rows). Every run is an AvailableNow query on the one session (after an unmeasured round warming the JIT, the
Python workers and the code paths); the runs take turns, plain then etl, their order reversed every other round.

Per run: the median of Spark's `triggerExecution` over its micro-batches (the batch's whole wall time: offsets,
planning, the foreachBatch body, the commit log) and of the foreachBatch body alone (`driver`), with the py4j
round trips the body makes on the driver (counted on py4j's client for the thread running it: deterministic, unlike
the times on a loaded machine) and the CPU milliseconds per batch of the driver's JVM and Python process (from the
end of the first batch to the end of the last: the work a batch costs, which a loaded machine moves much less than
its wall time). The
medians of the rounds are printed, then one machine-readable line:

    batch_cost batches=N rows=R small_plain_ms=.. small_etl_ms=.. small_overhead_ms=.. empty_plain_ms=..
        empty_etl_ms=.. empty_overhead_ms=.. etl_round_trips_small=.. etl_round_trips_empty=.. small_plain_cpu_ms=..
        small_etl_cpu_ms=.. empty_plain_cpu_ms=.. empty_etl_cpu_ms=.. load=..
    PASS: etl's fixed cost per small batch over plain Spark's +.. ms (issue 42: at most 100 ms)   (or FAIL)

--profile FILE writes cProfile's statistics of etl's foreachBatch bodies (the measured rounds') to FILE.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCHEMA = {"id": "bigint", "level": "string", "host": "string", "msg": "string"}
LEVELS = ("info", "warn", "error")
TARGET_MS = 100  # issue 42's done-when: etl's fixed cost per small batch over plain Spark's
PIPELINE = """\
    name: bench-batch-cost
    sources:
      - id: events
        type: file
        path: {input}
        format: jsonl
        max_files_per_trigger: 1
        schema: {schema}
    transforms:
      - {{id: errors, type: filter, input: events, expr: "level <> 'info'"}}
    sinks:
      - {{id: out, type: file, input: errors, path: {output}, format: jsonl}}
    checkpoint: {checkpoint}
"""


class Counter:
    """py4j round trips and wall/CPU time of the foreachBatch bodies, on the threads running them."""

    def __init__(self, spark: Any):
        self.local = threading.local()
        self.trips: list[int] = []
        self.body_ms: list[float] = []
        self.cpu_at_end: list[float] = []  # CPU-ms of the JVM and this process when each body ended
        self.jvm_pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
        self.profile: cProfile.Profile | None = None
        client = spark.sparkContext._gateway._gateway_client
        send = client.send_command

        def counted(*a: Any, **k: Any) -> Any:
            if getattr(self.local, "n", None) is not None:
                self.local.n += 1
            return send(*a, **k)

        client.send_command = counted

    def wrap(self, fn: Any) -> Any:
        def body(df: Any, batch_id: int) -> None:
            self.local.n = 0
            prof = self.profile
            t0 = time.perf_counter()
            if prof is not None:
                prof.enable()
            try:
                fn(df, batch_id)
            finally:
                if prof is not None:
                    prof.disable()
                self.body_ms.append((time.perf_counter() - t0) * 1000)
                self.trips.append(self.local.n)
                self.local.n = None
                self.cpu_at_end.append(cpu_ms(self.jvm_pid))

        return body

    def reset(self) -> None:
        self.trips, self.body_ms, self.cpu_at_end = [], [], []

    def cpu_per_batch(self) -> float:
        """CPU-ms per batch from the end of the first body to the end of the last: the loop (Spark's triggers, offsets
        and commit log, the bodies, listeners), not the query's start."""
        return (self.cpu_at_end[-1] - self.cpu_at_end[0]) / (len(self.cpu_at_end) - 1)


def cpu_ms(jvm_pid: int) -> float:
    """CPU milliseconds of the driver's JVM (Linux /proc) and of this process so far: the machine's load moves the
    wall times of a batch, much less what it costs."""
    import resource

    fields = Path(f"/proc/{jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
    jvm = (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    own = resource.getrusage(resource.RUSAGE_SELF)
    return jvm + (own.ru_utime + own.ru_stime) * 1000


def make_inputs(work: Path, batches: int, rows: int) -> dict[str, Path]:
    got = {}
    for name, n in (("small", rows), ("empty", 0)):
        folder = work / f"input-{name}"
        folder.mkdir(parents=True)
        for b in range(batches):
            lines = [json.dumps({"id": b * n + i, "level": LEVELS[(b * n + i) % 3], "host": f"h{i % 4}",
                                 "msg": f"event {b * n + i} of batch {b}"}) for i in range(n)]
            (folder / f"part-{b:04d}.jsonl").write_text("".join(x + "\n" for x in lines))
        got[name] = folder
    return got


def expected_rows(batches: int, rows: int) -> int:
    return sum(1 for i in range(batches * rows) if LEVELS[i % 3] != "info")


def durations(stream: Any) -> list[float]:
    return [p["durationMs"]["triggerExecution"] for p in stream.recentProgress if "batchId" in p]


def count_lines(folder: Path) -> int:
    return sum(1 for f in folder.rglob("part-*") if f.is_file() for _ in open(f, "rb"))


def run_plain(spark: Any, counter: Counter, src: Path, work: Path) -> list[float]:
    out, ck = work / "plain-out", work / "plain-ckpt"
    ddl = ", ".join(f"{k} {v}" for k, v in SCHEMA.items())
    df = spark.readStream.schema(ddl).option("maxFilesPerTrigger", 1).json(str(src)).filter("level <> 'info'")

    def write(batch: Any, batch_id: int) -> None:
        batch.write.mode("append").json(str(out))

    q = (df.writeStream.queryName("plain").option("checkpointLocation", str(ck))
         .foreachBatch(counter.wrap(write)).trigger(availableNow=True).start())
    q.awaitTermination()
    return durations(q)


def run_etl(spark: Any, counter: Counter, src: Path, work: Path) -> list[float]:
    from etl.check import check_file
    from etl.runtime.control import Control
    from etl.runtime.runner import PipelineRun, RunOptions

    out, ck = work / "etl-out", work / "etl-ckpt"
    work.mkdir(parents=True, exist_ok=True)
    p = work / "batch_cost.yaml"
    p.write_text(textwrap.dedent(PIPELINE.format(input=src, output=out, checkpoint=ck,
                                                 schema=json.dumps(SCHEMA))))
    c = check_file(p)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    control = Control(c.plan.name)  # as `etl run` has one: metrics per batch (no server: not started)
    run = PipelineRun(c.plan, spark, RunOptions(once=True, progress="none", control=control))
    batch_fn = run._batch_fn
    run._batch_fn = lambda q: counter.wrap(batch_fn(q))  # type: ignore[method-assign]
    run.start()
    run.wait()
    return [d for s in run.streams for d in durations(s)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--profile", help="write cProfile statistics of etl's foreachBatch bodies here")
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from etl.runtime.session import build_session

    spark = build_session("etl-bench-batch-cost", args.master, {"spark.ui.enabled": "false"}, ui=False)
    counter = Counter(spark)
    work = Path(tempfile.mkdtemp(prefix="etl-bench-batch-cost-"))
    inputs = make_inputs(work, args.batches, args.rows)
    runs = {"plain": run_plain, "etl": run_etl}
    got: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    prof = cProfile.Profile() if args.profile else None
    try:
        for r in range(args.repeat + 1):  # round 0 warms up
            for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                for kind, src in inputs.items():
                    run_dir = work / f"r{r}-{name}-{kind}"
                    counter.reset()
                    counter.profile = prof if r and name == "etl" else None
                    ms = runs[name](spark, counter, src, run_dir)
                    cpu = counter.cpu_per_batch()
                    want = expected_rows(args.batches, args.rows) if kind == "small" else 0
                    wrote = count_lines(run_dir / f"{name}-out")
                    if len(ms) != args.batches or len(counter.body_ms) != args.batches or wrote != want:
                        raise SystemExit(f"{name} {kind}: {len(ms)} batches, {len(counter.body_ms)} bodies, "
                                         f"{wrote} rows (expected {args.batches} batches, {want} rows)")
                    fig = (statistics.median(ms), statistics.median(counter.body_ms),
                           statistics.median(counter.trips), cpu)
                    if r:
                        got.setdefault((name, kind), []).append(fig)
                    print(f"round {r} {name:<5} {kind:<5} batch {fig[0]:6.0f} ms  driver {fig[1]:6.0f} ms  "
                          f"{fig[2]:4.0f} round trips  {fig[3]:5.0f} CPU-ms", flush=True)
                    shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    med = {k: tuple(statistics.median(f[i] for f in v) for i in range(4)) for k, v in got.items()}
    for kind in inputs:
        p, e = med[("plain", kind)], med[("etl", kind)]
        print(f"{kind:<5} plain {p[0]:6.0f} ms (driver {p[1]:5.0f} ms, {p[2]:4.0f} round trips)   etl {e[0]:6.0f} ms "
              f"(driver {e[1]:5.0f} ms, {e[2]:4.0f} round trips)   etl's overhead {e[0] - p[0]:+6.0f} ms per batch, "
              f"CPU {p[3]:.0f} / {e[3]:.0f} ms ({e[3] - p[3]:+.0f})")
    if prof is not None:
        prof.dump_stats(args.profile)
    print(f"batch_cost batches={args.batches} rows={args.rows} " + " ".join(
        f"{kind}_plain_ms={med[('plain', kind)][0]:.0f} {kind}_etl_ms={med[('etl', kind)][0]:.0f} "
        f"{kind}_overhead_ms={med[('etl', kind)][0] - med[('plain', kind)][0]:.0f}" for kind in inputs)
          + " " + " ".join(f"etl_round_trips_{kind}={med[('etl', kind)][2]:.0f}" for kind in inputs)
          + " " + " ".join(f"{kind}_{name}_cpu_ms={med[(name, kind)][3]:.0f}" for kind in inputs for name in runs)
          + f" load={os.getloadavg()[0]:.1f}")
    over = med[("etl", "small")][0] - med[("plain", "small")][0]
    print(f"{'PASS' if over <= TARGET_MS else 'FAIL'}: etl's fixed cost per small batch over plain Spark's "
          f"{over:+.0f} ms (issue 42: at most {TARGET_MS} ms)")


if __name__ == "__main__":
    main()
