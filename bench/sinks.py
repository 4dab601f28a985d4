#!/usr/bin/env python3
"""Sink throughput: rows written from the executors.

    .venv/bin/python bench/sinks.py file  [--events 1000000] [--repeat 2]
    .venv/bin/python bench/sinks.py mysql [--events 1000000] [--repeat 2]

file: jsonl files -> file sink (jsonl) through etl (PipelineRun, --once) against the same query written by
Spark's own `writeStream.format("json")` (AvailableNow), side by side in one process on one local[2]
session, alternating, --repeat times after one unmeasured round of both (the first query of a JVM pays its
warm-up: class loading, JIT, etl's jar). What is timed, on both sides: from building the query to its end
(etl: compiling the checked plan into its queries, starting them, every micro-batch with its publish; Spark:
readStream..start(), awaitTermination). Not timed: the JVM's start and, for etl, reading and checking the
YAML (`etl validate`'s work, once per pipeline file, not per run). Each side's wall seconds and its CPU
seconds (the JVM's plus this Python process's: the driver's py4j work counts) are measured, since on a loaded
machine the wall clock mostly measures the other processes. Both write the same rows (counted after each
round); etl also checks every line for a malformed record (its dead letters), which Spark's query does not.
Last line: `sinks file events=N etl_s=A spark_s=B ratio=B/A etl_cpu_s=C spark_cpu_s=D cpu_ratio=D/C load=..`
with the medians (ratio >= 1: etl is faster), then the best of each.

mysql: jsonl files -> mysql sink on a Spark standalone cluster of two one-core workers (tests/servers), with
1 executor (spark.cores.max=1) and with 2, each run in its own driver process; reports rows/s and the driver
Python process's CPU seconds (rows never pass through it: its CPU time does not grow with the rows).
Last line: `sinks mysql events=N rows_per_s_1=X rows_per_s_2=Y driver_cpu_s_1=.. driver_cpu_s_2=..`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCHEMA = {"id": "bigint", "host": "string", "user": "string", "status": "int", "bytes": "bigint", "ts": "timestamp"}
DDL = ", ".join(f"{k} {v}" for k, v in SCHEMA.items())


def make_input(folder: Path, events: int, files: int = 4) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    hosts = [f"web-{i}" for i in range(20)]
    per = events // files
    for f in range(files):
        with open(folder / f"in-{f}.jsonl", "w") as fh:
            for i in range(f * per, (f + 1) * per):
                fh.write(json.dumps({"id": i, "host": rng.choice(hosts), "user": f"u{rng.randrange(5000)}",
                                     "status": rng.choice((200, 200, 200, 404, 500)), "bytes": rng.randrange(1 << 20),
                                     "ts": f"2026-01-10T12:{(i // 60000) % 60:02d}:{(i // 1000) % 60:02d}Z"}) + "\n")


def pipeline(src: Path, sink: dict, checkpoint: Path) -> str:
    return "\n".join([
        "name: bench-sinks",
        "sources:",
        "  - " + json.dumps({"id": "events", "type": "file", "path": str(src), "format": "jsonl", "schema": SCHEMA}),
        "sinks:",
        "  - " + json.dumps({"id": "out", "input": "events", **sink}),
        f"checkpoint: {checkpoint}",
    ]) + "\n"


def cpu_seconds(spark) -> tuple[float, float]:
    """CPU seconds so far of the session's JVM (local master: the executors too) and of this Python process."""
    f = Path(f"/proc/{spark._jvm.java.lang.ProcessHandle.current().pid()}/stat").read_text().rsplit(")", 1)[1].split()
    me = resource.getrusage(resource.RUSAGE_SELF)
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"), me.ru_utime + me.ru_stime


def timed(spark, run) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the JVM and of this process, of which this process's) of `run()`."""
    (j0, p0), t0 = cpu_seconds(spark), time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    j1, p1 = cpu_seconds(spark)
    return wall, (j1 - j0) + (p1 - p0), p1 - p0


def alternating(spark, runs: dict, repeat: int) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """Each of `runs` (name -> function) once unmeasured, then `repeat` rounds of all of them, their order reversed
    every other round; (name -> (median wall seconds, median CPU seconds)), the load average after each round."""
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    loads = []
    for r in range(repeat + 1):
        for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            wall, cpu, _ = timed(spark, runs[name])
            if r:
                got[name].append((wall, cpu))
                print(f"round {r} {name}: {wall:.2f} s, {cpu:.2f} CPU-s", flush=True)
        loads.append(Path("/proc/loadavg").read_text().split()[0])
    return {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for name, v in got.items()}, loads


def ratio_line(label: str, med: dict[str, tuple[float, float]], loads: list[str], ours: str, theirs: str,
               **fields: object) -> str:
    """The last line of a side-by-side bench: the medians of `ours` and `theirs` and their ratios (above 1: ours
    is faster)."""
    (ow, oc), (tw, tc) = med[ours], med[theirs]
    head = " ".join([label, *(f"{k}={v}" for k, v in fields.items())])
    return (f"{head} {ours}_s={ow:.2f} {theirs}_s={tw:.2f} ratio={tw / ow:.2f} {ours}_cpu_s={oc:.2f} "
            f"{theirs}_cpu_s={tc:.2f} cpu_ratio={tc / oc:.2f} load={'/'.join(loads)}")


def run_etl(spark, plan) -> float:
    """One run of a checked plan: compiled into its queries, started, to the end of its input."""
    from etl.runtime.runner import PipelineRun, RunOptions

    t0 = time.perf_counter()
    run = PipelineRun(plan, spark, RunOptions(once=True, progress="none"))
    run.start()
    run.wait()
    return time.perf_counter() - t0


def checked(work: Path, text: str):
    from etl.check import check_file

    work.mkdir(parents=True, exist_ok=True)
    (work / "p.yaml").write_text(text)
    plan = check_file(work / "p.yaml", programs=True).plan
    assert plan is not None
    return plan


def run_spark(spark, src: Path, out: Path, checkpoint: Path, checked: bool = False) -> float:
    """Spark's own query. `checked`: it also tells malformed lines apart as etl's file source does (PERMISSIVE
    with a corrupt-record column, etl.components.sources.file.build) and writes the well-formed rows only (etl writes
    the others as dead letters: none here), the same per-row work as etl's minus the dead-letter write."""
    t0 = time.perf_counter()
    reader = spark.readStream.schema(DDL + (", _corrupt string" if checked else ""))
    if checked:
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt")
    df = reader.json(str(src))
    if checked:
        df = df.where("_corrupt IS NULL").drop("_corrupt")
    q = (df.writeStream.format("json").option("path", str(out))
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    q.awaitTermination()
    return time.perf_counter() - t0


def count_lines(folder: Path, pattern: str) -> int:
    return sum(sum(1 for _ in open(f)) for f in folder.glob(pattern))


def bench_file(events: int, repeat: int) -> None:
    from etl.runtime.session import build_session

    tmp = Path(tempfile.mkdtemp(prefix="etl-bench-sinks-"))
    try:
        make_input(tmp / "in", events)
        spark = build_session("bench-sinks", "local[2]", {"spark.ui.enabled": "false"}, ui=False)
        etl_s, spark_s, checked_s, etl_cpu, spark_cpu, checked_cpu = [], [], [], [], [], []

        def etl_round(name: str) -> tuple[float, float, float]:
            sink = {"type": "file", "path": str(tmp / name / "out"), "format": "jsonl"}
            plan = checked(tmp / name, pipeline(tmp / "in", sink, tmp / name / "ckpt"))  # validate's part: not timed
            return timed(spark, lambda: run_etl(spark, plan))

        def spark_round(name: str, check: bool = False) -> tuple[float, float, float]:
            return timed(spark, lambda: run_spark(spark, tmp / "in", tmp / f"{name}/out", tmp / f"{name}/ckpt", check))

        etl_round("warm-etl")
        spark_round("warm-spark")
        spark_round("warm-checked", True)
        load0 = os.getloadavg()[0]
        for r in range(repeat):
            e, ec, ep = etl_round(f"etl{r}")
            s, sc, sp = spark_round(f"spark{r}")
            k, kc, _ = spark_round(f"checked{r}", True)
            assert count_lines(tmp / f"etl{r}/out", "part-*.jsonl") == events
            assert count_lines(tmp / f"spark{r}/out", "part-*.json") == events
            assert count_lines(tmp / f"checked{r}/out", "part-*.json") == events
            print(f"run {r}: etl {e:.2f}s ({ec:.2f} CPU-s, {ep:.2f} in Python), spark {s:.2f}s ({sc:.2f} CPU-s, "
                  f"{sp:.2f} in Python), spark checking lines {k:.2f}s ({kc:.2f} CPU-s), "
                  f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
            etl_s.append(e)
            spark_s.append(s)
            checked_s.append(k)
            etl_cpu.append(ec)
            spark_cpu.append(sc)
            checked_cpu.append(kc)
        med_etl, med_spark, med_checked = (statistics.median(v) for v in (etl_s, spark_s, checked_s))
        cpu_etl, cpu_spark, cpu_checked = (statistics.median(v) for v in (etl_cpu, spark_cpu, checked_cpu))
        print(f"sinks file events={events} etl_s={med_etl:.2f} spark_s={med_spark:.2f} "
              f"ratio={med_spark / med_etl:.2f} etl_cpu_s={cpu_etl:.2f} spark_cpu_s={cpu_spark:.2f} "
              f"cpu_ratio={cpu_spark / cpu_etl:.2f} spark_checked_s={med_checked:.2f} "
              f"ratio_checked={med_checked / med_etl:.2f} cpu_ratio_checked={cpu_checked / cpu_etl:.2f} "
              f"load={load0:.1f}-{os.getloadavg()[0]:.1f} "
              f"best_etl_s={min(etl_s):.2f} best_spark_s={min(spark_s):.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mysql_driver(args: argparse.Namespace) -> None:
    """Child process: one run of the pipeline on the cluster; prints seconds and this process's CPU time."""
    from etl.runtime.session import build_session

    spark = build_session("bench-sinks-mysql", args.master, {
        "spark.cores.max": str(args.cores), "spark.executor.cores": "1", "spark.executor.memory": "768m",
        "spark.sql.files.maxPartitionBytes": str(8 << 20), "spark.sql.leafNodeDefaultParallelism": "2"})
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    seconds = run_etl(spark, checked(Path(args.work), Path(args.text).read_text()))
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    print(json.dumps({"seconds": seconds, "driver_cpu_s": cpu}))
    spark.stop()


def bench_mysql(events: int, repeat: int = 1) -> None:
    """1 and 2 executors alternating, `repeat` rounds (each run its own driver process and table); medians."""
    from tests.servers.mariadb import MariaDBServer
    from tests.servers.spark_cluster import SparkCluster

    tmp = Path(tempfile.mkdtemp(prefix="etl-bench-mysql-"))
    db, cluster = MariaDBServer(), SparkCluster()
    try:
        make_input(tmp / "in", events)
        db.start()
        cluster.start()
        results: dict[int, list[dict]] = {1: [], 2: []}
        for r, cores in ((r, c) for r in range(repeat) for c in (1, 2)):
            table = f"bench_{cores}_{r}"
            sink = {"type": "mysql", "host": db.host, "port": db.port, "user": db.user, "password": db.password,
                    "database": db.database, "table": table, "create_table": True, "batch_size": 5000}
            work = tmp / f"run{cores}-{r}"
            work.mkdir()
            (work / "text").write_text(pipeline(tmp / "in", sink, work / "ckpt"))
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            out = subprocess.run([sys.executable, __file__, "mysql-driver", "--master", cluster.master_url,
                                  "--cores", str(cores), "--work", str(work), "--text", str(work / "text")],
                                 env=env, capture_output=True, text=True, check=True)
            res = json.loads(out.stdout.strip().splitlines()[-1])
            conn = db.connect()
            with conn.cursor() as cur:
                cur.execute(f"SELECT COUNT(*) FROM `{table}`")
                assert cur.fetchone()[0] == events
            conn.close()
            results[cores].append(res)
            print(f"round {r}, {cores} executor(s): {res['seconds']:.1f}s, {events / res['seconds']:.0f} rows/s, "
                  f"driver Python CPU {res['driver_cpu_s']:.2f}s, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        secs = {c: statistics.median(x["seconds"] for x in v) for c, v in results.items()}
        cpu = {c: statistics.median(x["driver_cpu_s"] for x in v) for c, v in results.items()}
        print(f"sinks mysql events={events} rows_per_s_1={events / secs[1]:.0f} rows_per_s_2={events / secs[2]:.0f} "
              f"driver_cpu_s_1={cpu[1]:.2f} driver_cpu_s_2={cpu[2]:.2f} rounds={repeat}")
    finally:
        cluster.cleanup(graceful=False)
        db.cleanup(graceful=False)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["file", "mysql", "mysql-driver"])
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master")
    ap.add_argument("--cores", type=int)
    ap.add_argument("--work")
    ap.add_argument("--text")
    args = ap.parse_args()
    if args.what == "file":
        bench_file(args.events or 1_000_000, args.repeat)
    elif args.what == "mysql":
        bench_mysql(args.events or 1_000_000, args.repeat)
    else:
        mysql_driver(args)


if __name__ == "__main__":
    main()
