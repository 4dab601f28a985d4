"""Benchmark: N regex rules over M JSON events in Spark -- the optimized filter vs a plain Spark OR of rlike vs the scan.

    .venv/bin/python bench/filter.py --rules 1000 --events 1000000 [--repeat 3] [--seed 7]

Generates M reproducible events (bench/_gen.py: ``{ts, host, user, pid, cmd}``
with a command line in ``cmd``) as jsonl files in a temporary folder (kept
between runs under $TMPDIR/etl-bench-filter, keyed by M and the seed; --fresh
regenerates) and N reproducible regex rules over ``cmd`` (the generator of
bench/filter_core.py), written as a rule file next to two generated pipelines.
Then, in ONE process with one SparkSession, each variant runs as an
AvailableNow streaming query over the same files through the etl compile path
(the file source's builder, foreachBatch, `Compiler.evaluate`), its output
frame written to Spark's ``noop`` sink (every row and column materialized,
nothing stored):

* optimized: file source -> filter with the rules -> noop (the rules are
  decided in the JVM, etl.compile.rules_jvm; with ETL_RULES_JVM=off by
  Hyperscan in Python workers);
* naive_spark: the scan pipeline's frame filtered with the same regexes as a
  balanced OR tree of ``rlike`` (``fail`` when Spark cannot run it);
* scan: file source -> noop (no filter).

Variants run in turns (scan, optimized, naive, scan, ...) after one untimed
warm-up each; medians of --repeat runs are reported. A run's time is the
streaming query's, from its start to its end. What a pipeline pays once when it
starts is reported apart: the rule compile, cold (empty on-disk cache) and cached
(etl.diskcache, what a restart pays), and the query's planning (the
compile path building its frames, the program's broadcast). Last line:

    filter rules=N events=M optimized_s=X naive_spark_s=Y scan_s=Z
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gen import make_events, make_rules  # noqa: E402

SCHEMA = "{ts: bigint, host: string, user: string, pid: bigint, cmd: string}"
DATA_VERSION = 1  # bump when _gen.make_events changes


def events_dir(m: int, seed: int, files: int, fresh: bool) -> Path:
    root = Path(tempfile.gettempdir()) / "etl-bench-filter" / f"events-v{DATA_VERSION}-{m}-{seed}-{files}"
    if root.is_dir() and not fresh:
        return root
    shutil.rmtree(root, ignore_errors=True)
    tmp = root.with_name(root.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True)
    events = make_events(m, seed)
    per = -(-m // files)
    for k in range(files):
        chunk = events[k * per:(k + 1) * per]
        (tmp / f"part-{k:03d}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in chunk))
    os.replace(tmp, root)
    return root


def write_pipelines(folder: Path, data: Path, rules: list[Any]) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for r in rules:
        w = r.when
        lines.append(f"- {{id: {r.id}, when: {{field: cmd, regex: {json.dumps(w.regex)}, "
                     f"caseless: {str(w.caseless).lower()}}}}}")
    (folder / "rules.yaml").write_text("\n".join(lines) + "\n")
    source = f"sources: [{{id: src, type: file, path: {json.dumps(str(data))}, format: jsonl, schema: {SCHEMA}}}]\n"
    optimized = folder / "optimized.yaml"
    optimized.write_text("name: bench-optimized\n" + source
                         + "transforms: [{id: f, type: filter, input: src, rule_files: [rules.yaml]}]\n"
                           "sinks: [{id: out, type: file, input: f, path: out}]\n")
    scan = folder / "scan.yaml"
    scan.write_text("name: bench-scan\n" + source + "sinks: [{id: out, type: file, input: src, path: out}]\n")
    return optimized, scan


def checked_plan(path: Path) -> Any:
    from etl.check import check_file

    c = check_file(path, programs=True, environ=dict(os.environ))
    if c.plan is None:
        raise SystemExit("\n".join(d.render() for d in c.report.sorted()))
    return c.plan


def naive_condition(rules: list[Any]) -> Any:
    from pyspark.sql import functions as F

    conds = [F.col("cmd").rlike(("(?i)" if r.when.caseless else "") + r.when.regex) for r in rules]
    while len(conds) > 1:  # a balanced tree: a left-deep OR of hundreds overflows the analyzer's stack
        conds = [conds[i] | conds[i + 1] if i + 1 < len(conds) else conds[i] for i in range(0, len(conds), 2)]
    return conds[0]


def tree_cpu() -> float:
    """CPU seconds used so far by this process and its descendants (the JVM, its Python workers), from /proc;
    exited children that were waited for count too. On a shared machine CPU time is steadier than wall time."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    used: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        parent[int(d)] = int(rest[1])
        used[int(d)] = sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
    me = os.getpid()
    total = 0
    for pid, t in used.items():
        p = pid
        while p not in (0, 1) and p != me:
            p = parent.get(p, 0)
        if p == me:
            total += t
    return total / ticks


def _cpu(variant: str) -> list[float]:
    return cpu.get({"naive_spark": "naive"}.get(variant, variant), [])


def runner(spark: Any, plan: Any, work: Path, name: str,
           shape: Callable[[Any], Any] | None = None) -> Callable[[], float]:
    """A function running the plan once as an AvailableNow query (fresh checkpoint); returns seconds."""
    from etl.compile import CompileContext, Compiler

    count = [0]
    cpu.setdefault(name, [])
    planned.setdefault(name, [])

    def run() -> float:
        count[0] += 1
        ck = work / "checkpoints" / f"{name}-{count[0]}"
        ctx = CompileContext(spark, plan.graph, str(ck), plan=plan)
        compiler = Compiler(ctx)
        p0 = time.perf_counter()
        (q,) = compiler.queries()  # planning: once per query start (like the rule compile), reported apart
        planned[name].append(time.perf_counter() - p0)
        c0, t0 = tree_cpu(), time.perf_counter()
        # the sink only: no dead-letter output (it would make the source frame cached for two readers)
        q.outputs = [o for o in q.outputs if o.id == "out"]

        def batch(df: Any, batch_id: int) -> None:
            got = compiler.evaluate(q, df)
            frames, cached = (got.frames, got.cached) if hasattr(got, "frames") else got
            try:
                out = frames["out"]
                if shape is not None:
                    out = shape(out)
                out.write.format("noop").mode("overwrite").save()
            finally:
                for c in cached:
                    c.unpersist()

        s = (q.stream.writeStream.queryName(f"bench-{name}-{count[0]}").option("checkpointLocation", str(ck))
             .foreachBatch(batch).trigger(availableNow=True).start())
        s.awaitTermination()
        if s.exception() is not None:
            raise RuntimeError(" ".join(str(s.exception()).split())[:2000])
        wall = time.perf_counter() - t0
        cpu[name].append(tree_cpu() - c0)
        return wall

    return run


cpu: dict[str, list[float]] = {}  # variant -> CPU seconds of each run (this process tree)
planned: dict[str, list[float]] = {}  # variant -> seconds building the query (compile path, broadcast) per run


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", type=int, default=1000)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--files", type=int, default=8, help="jsonl files the events are spread over")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--fresh", action="store_true", help="regenerate the events")
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="write the pipelines and rule file here (e.g. for etl explain)")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    data = events_dir(args.events, args.seed, args.files, args.fresh)
    mb = sum(f.stat().st_size for f in data.iterdir()) / 1e6
    print(f"events: {args.events} in {args.files} files, {mb:.1f} MB ({data}; {time.perf_counter() - t:.1f} s)",
          flush=True)
    rules = make_rules(args.rules, args.seed)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="etl-bench-filter-"))
    optimized_yaml, scan_yaml = write_pipelines(work, data, rules)

    # compile: cold (empty on-disk cache), then what a restart pays (cached)
    os.environ["ETL_CACHE_DIR"] = str(work / "cache-cold")
    t = time.perf_counter()
    checked_plan(optimized_yaml)
    compile_cold = time.perf_counter() - t
    t = time.perf_counter()
    plan = checked_plan(optimized_yaml)
    compile_cached = time.perf_counter() - t
    program = plan.step("f").program
    db_bytes = sum(len(d.serialized or b"") for d in program.databases)
    print(f"program: {len(program.rules)} rules, {sum(len(d.patterns) for d in program.databases)} Hyperscan "
          f"patterns ({db_bytes} bytes), {len(program.fallbacks)} python fallbacks", flush=True)
    scan_plan = checked_plan(scan_yaml)

    from etl.compile.context import session_target
    from etl.physical import physical_plan
    from etl.runtime.session import build_session

    spark = build_session("bench-filter", args.master, {"spark.ui.enabled": "false"}, ui=False)
    choice = physical_plan(plan, session_target(spark)).node("f").choice("rules")
    why = "; ".join(r.why for r in choice.rejected)
    print("optimized runs in: " + ("the JVM (etl.compile.rules_jvm; ETL_RULES_JVM=off for Python workers)"
                                   if choice.engine == "rules-jvm" else f"Python workers ({why})"), flush=True)
    variants: dict[str, Callable[[], float]] = {
        "scan": runner(spark, scan_plan, work, "scan"),
        "optimized": runner(spark, plan, work, "optimized"),
    }
    if not args.skip_naive:
        cond = naive_condition(rules)
        variants["naive_spark"] = runner(spark, scan_plan, work, "naive", lambda df: df.where(cond))
    times: dict[str, list[float]] = {k: [] for k in variants}
    failed: dict[str, str] = {}
    for k, fn in list(variants.items()):  # warm-up: JIT, Python workers, the program's first load
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - Spark's failure to run a variant is a result, not a crash
            failed[k] = " ".join(str(e).split())[:2000]
            del variants[k]
            print(f"{k}: fail ({failed[k]})", flush=True)
    for r in range(args.repeat):
        for k, fn in variants.items():
            times[k].append(fn())
        print(f"run {r + 1}: " + "  ".join(f"{k} {v[-1]:.2f} s ({_cpu(k)[-1]:.1f} cpu-s)"
                                                for k, v in times.items() if v), flush=True)
    med = {k: statistics.median(v) for k, v in times.items() if v}
    x, z = med.get("optimized"), med.get("scan")
    y = med.get("naive_spark")
    if x and z:
        print(f"scan/optimized = {z / x:.2f}" + (f"; naive/optimized = {y / x:.2f}" if y else ""), flush=True)
        cm = {k: statistics.median(_cpu(k)[1:] or _cpu(k)) for k in med}
        print("cpu-s medians: " + "  ".join(f"{k} {v:.1f}" for k, v in cm.items())
              + f"; scan/optimized by cpu = {cm['scan'] / cm['optimized']:.2f}", flush=True)
        print("planning medians (not in the times above): "
              + "  ".join(f"{k} {statistics.median(v):.2f} s" for k, v in planned.items() if v), flush=True)
    spark.stop()
    print(f"compile_s={compile_cold:.2f} cached_compile_s={compile_cached:.2f}")

    def fmt(k: str) -> str:
        return "fail" if k in failed else f"{med[k]:.2f}" if k in med else "skipped"

    print(f"filter rules={args.rules} events={args.events} optimized_s={fmt('optimized')} "
          f"naive_spark_s={fmt('naive_spark')} scan_s={fmt('scan')}")


if __name__ == "__main__":
    main()
