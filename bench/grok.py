#!/usr/bin/env python3
"""grok throughput: etl's JVM grok vs dissect vs the same grok in a Python UDF vs a plain text scan.

    .venv/bin/python bench/grok.py                 # 1,000,000 lines, local[2]
    .venv/bin/python bench/grok.py --lines 200000 --repeat 2
    .venv/bin/python bench/grok.py --variants etl,dissect      # grok and dissect side by side
    .venv/bin/python bench/grok.py --small-batches 20 --repeat 5  # the fixed cost of a 10-line micro-batch

All variants are the same etl streaming query (--once): a text file source, then
(etl) the grok transform: %{COMBINEDAPACHELOG} expanded once, run in the JVM by one static call
    per line (etl/jvm/Grok.java: the matcher program first, java.util.regex for what it leaves);
    non-matching lines would go to dead letters (default on_error);
(etl_regex) the same with ETL_GROK_PROGRAM=off: java.util.regex answers every line, reported on an
    information line;
(python_udf) the same grok with pygrok in mapInPandas (one Grok per partition);
(python_re) the same expanded regex (GrokPattern.python_regex) with Python `re` in mapInPandas,
    a stronger Python baseline than pygrok, reported on the line before the last;
(dissect) the same lines cut by the dissect transform (etl/jvm/Dissect.java) into the grok's fields, on the
    layout's delimiters: `%{clientip} %{ident} %{auth} [%{timestamp}] "%{verb} %{request} HTTP/%{httpversion}"
    %{response} %{bytes} "%{referrer}" "%{agent}"`, reported with its ratio to the grok (etl);
(scan) no parsing at all: the lines themselves;
(shape) no matching either, but rows of the grok's shape: `split(line, ' ', 11)` into 11 string columns (about
    the grok's 11 values and bytes), reported on an information line: what any grok pays for its output rows;
then the same file sink (jsonl, one file per micro-batch, atomic rename). Throughput is input
megabytes (10^6 bytes) per second of the run (query start to the last commit), the median of
--repeat runs (the variants take turns within each round), after a warm-up run of each variant on 50,000 lines (JIT, codegen, Python workers). The last line is machine-readable:

    grok lines=N mb=M scan_mb_s=Z ... etl_mb_s=X dissect_mb_s=D ... (one per variant run)

With scan, etl and dissect among the variants, dissect/grok is printed twice: end to end (the runs' medians) and
parse only (each median net of scan's: what the parse adds, its output rows included). Measured 2026-11-29, 2
cores shared with other work (load 12), `--lines 200000 --repeat 5 --variants scan,etl,dissect`, medians: scan
0.8, etl 2.1, dissect 1.6 CPU-s; dissect/grok 1.75x end to end (1.26x by CPU time), 3.08x parse only (1.52x).
With the text source no longer persisted for its own dead letters (load 10, `--repeat 3`): scan 1.1, etl 1.7,
dissect 1.3 CPU-s; dissect/grok 1.32x by CPU time end to end, about 3x parse only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.gen_access_log import lines as access_lines  # noqa: E402

FILES = 4
PIPELINE = """\
    name: bench-{variant}
    sources:
      - {{id: logs, type: file, path: {input}, format: text{source}}}
    transforms: {transforms}
    sinks:
      - {{id: out, type: file, input: {last}, path: {output}, format: {format}, batch_size: 10000}}
    checkpoint: {checkpoint}
"""
GROK = '[{id: parsed, type: grok, input: logs, field: line, pattern: "%{COMBINEDAPACHELOG}", keep_original: false}]'
# the same layout for dissect (its fields: the grok's but rawrequest), the line dropped as the grok drops it
DISSECT_PATTERN = ('%{clientip} %{ident} %{auth} [%{timestamp}] "%{verb} %{request} HTTP/%{httpversion}" %{response} '
                   '%{bytes} "%{referrer}" "%{agent}"')
DISSECT = ("[{id: parsed, type: dissect, input: logs, mapping: {line: '" + DISSECT_PATTERN + "'}, "
           "remove_field: [line]}]")
# no matching at all, but rows of the grok's shape: the line cut at its first 10 spaces into 11 string columns
SHAPE_FIELDS = ["clientip", "ident", "auth", "timestamp", "zone", "verb", "request", "httpversion", "response",
                "bytes", "rest"]
SHAPE = ("[{id: cut, type: select, input: logs, fields: [\"split(line, ' ', 11) AS p\"]}, "
         "{id: parsed, type: select, input: cut, fields: [" +
         ", ".join(f'"p[{i}] AS {n}"' for i, n in enumerate(SHAPE_FIELDS)) + "]}]")


def make_data(folder: Path, n: int) -> int:
    """`n` lines in FILES files (cached: regenerated only when the line count differs)."""
    stamp = folder / f".lines-{n}"
    if not stamp.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        per = -(-n // FILES)
        gen = access_lines(n, seed=11)
        for f in range(FILES):
            with open(folder / f"access-{f}.log", "w", encoding="utf-8") as fh:
                for _ in range(min(per, n - f * per)):
                    fh.write(next(gen) + "\n")
        stamp.touch()
    return sum(p.stat().st_size for p in folder.glob("access-*.log"))


def udf_source(pattern: Any, engine: str) -> Callable[[Any, Any], Any]:
    """The text source followed by grok in Python inside mapInPandas: pygrok (`python_udf`, the grok
    library a Python user reaches for) or the very same expanded regex with `re` (`python_re`)."""
    fields = pattern.fields
    regex = pattern.python_regex
    schema = ", ".join(f"`{name}` string" for name, _ in pattern.captures)
    names = [name for name, _ in pattern.captures]

    def with_re(it: Any) -> Any:
        import re

        import pandas as pd

        rx = re.compile(regex)
        for pdf in it:
            cols: dict[str, list] = {n: [] for n in names}
            for line in pdf["line"]:
                m = rx.search(line) if line is not None else None
                got: dict[str, Any] = {}
                if m is not None:
                    for f in fields:
                        if got.get(f.name) is None:
                            got[f.name] = m.group(f.group)
                for n in names:
                    cols[n].append(got.get(n))
            yield pd.DataFrame(cols)

    def with_pygrok(it: Any) -> Any:
        import pandas as pd
        from pygrok import Grok

        grok = Grok(pattern.pattern)  # once per partition: pygrok reads its pattern files here
        for pdf in it:
            cols: dict[str, list] = {n: [] for n in names}
            for line in pdf["line"]:
                got = (grok.match(line) if line is not None else None) or {}
                for n in names:
                    v = got.get(n)
                    cols[n].append(None if v is None else str(v))
            yield pd.DataFrame(cols)

    grok_batches = with_pygrok if engine == "pygrok" else with_re

    def build(ctx: Any, node: Any) -> Any:
        from etl.components.sources.file.build import build as file_build

        return file_build(ctx, node).mapInPandas(grok_batches, schema)

    return build


def _proc_cpu(pid: int) -> tuple[float, int]:
    """(own + waited-for children CPU seconds, parent pid) of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / tick, int(f[1])


def cpu_snapshot(root: int) -> dict[int, float]:
    """CPU seconds of this driver, the JVM `root` and every process below it (Python workers), per pid."""
    info: dict[int, tuple[float, int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                info[int(d)] = _proc_cpu(int(d))
            except (OSError, IndexError, ValueError):
                continue

    def below_root(pid: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = info.get(pid, (0.0, 1))[1]
        return False

    return {pid: cpu for pid, (cpu, _) in info.items() if pid == os.getpid() or below_root(pid)}


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two snapshots (a process that ended in between is covered by its parent's
    children time when the parent reaped it; it never counts negative)."""
    return sum(max(0.0, cpu - before.get(pid, 0.0)) for pid, cpu in after.items())


def count_rows(out: Path, fmt: str) -> int:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return sum(pq.read_metadata(f).num_rows for f in out.glob("part-*.parquet"))
    return sum(1 for f in out.glob(f"part-*.{fmt}") for _ in open(f, "rb")) - (
        len(list(out.glob("part-*.csv"))) if fmt == "csv" else 0)


def run_variant(spark: Any, variant: str, input_dir: Path, work: Path, fmt: str = "jsonl",
                source: str = "") -> tuple[float, int]:
    from etl.check import check_file
    from etl.grok import expand
    from etl.runtime.runner import PipelineRun, RunOptions

    out = work / f"out-{variant}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work / f"ckpt-{variant}", ignore_errors=True)
    text = PIPELINE.format(variant=variant, input=input_dir, output=out, checkpoint=work / f"ckpt-{variant}", format=fmt,
                           source=source,
                           transforms=GROK if variant.startswith("etl") else SHAPE if variant == "shape"
                           else DISSECT if variant == "dissect" else "[]",
                           last="logs" if variant == "scan" or variant in ("python_udf", "python_re") else "parsed")
    p = work / f"{variant}.yaml"
    p.write_text(textwrap.dedent(text))
    c = check_file(p, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    engines = {"python_udf": "pygrok", "python_re": "re"}
    sources = {"logs": udf_source(expand("%{COMBINEDAPACHELOG}"), engines[variant])} if variant in engines else None
    run = PipelineRun(c.plan, spark, RunOptions(once=True, progress="none", sources=sources))
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
    c0 = cpu_snapshot(jvm)
    os.environ["ETL_GROK_PROGRAM"] = "off" if variant == "etl_regex" else "on"  # read when the query is planned
    t0 = time.perf_counter()
    run.start()
    run.wait()
    seconds = time.perf_counter() - t0
    CPU[variant] = cpu_delta(c0, cpu_snapshot(jvm))
    BATCH_MS[variant] = [p["durationMs"]["triggerExecution"] for s in run.streams for p in s.recentProgress
                         if p["numInputRows"]]
    return seconds, count_rows(out, fmt)


def small_batches(spark: Any, batches: int, rounds: int) -> None:
    """--small-batches N: the grok pipeline over N files of 10 lines, one file a micro-batch (max_files_per_trigger:
    1), its fixed cost per batch: wall ms (Spark's triggerExecution, median) and CPU ms (the run's / N). Taking
    turns with the same run as before issue 42 (`before`: etl.compile.Compiler.carrier and etl.compile.counts.
    DeadCounts.none patched out in this process): the source's micro-batch persisted for the grok and its own dead
    letters, and a Spark job writing those every batch, none or not."""
    from etl.compile import Compiler
    from etl.compile.counts import DeadCounts

    patched = (Compiler.carrier, DeadCounts.none)
    work = Path(tempfile.mkdtemp(prefix="etl-bench-small-"))
    src = work / "input"
    src.mkdir()
    lines = list(access_lines(batches * 10))
    for i in range(batches):
        (src / f"part-{i:04d}.log").write_text("".join(x + "\n" for x in lines[i * 10:(i + 1) * 10]))
    ms: dict[str, list[float]] = {"now": [], "before": []}
    cpu: dict[str, list[float]] = {"now": [], "before": []}
    try:
        for r in range(rounds + 1):  # the first round warms up
            for mode in ms:
                Compiler.carrier, DeadCounts.none = patched if mode == "now" else (  # type: ignore[method-assign]
                    lambda self, q: None, lambda self: False)
                _, rows = run_variant(spark, "etl", src, work, source=", max_files_per_trigger: 1")
                if rows != batches * 10 or len(BATCH_MS["etl"]) != batches:
                    raise SystemExit(f"{mode}: {rows} rows in {len(BATCH_MS['etl'])} batches")
                if r:
                    ms[mode].append(statistics.median(BATCH_MS["etl"]))
                    cpu[mode].append(CPU["etl"] * 1000 / batches)
                    print(f"round {r} {mode:<6} {ms[mode][-1]:6.0f} ms per batch  cpu {cpu[mode][-1]:6.0f} ms per "
                          "batch", flush=True)
    finally:
        Compiler.carrier, DeadCounts.none = patched  # type: ignore[method-assign]
        shutil.rmtree(work, ignore_errors=True)
    print(f"small_batches batches={batches} rounds={rounds} " + " ".join(
        f"{m}_ms={statistics.median(ms[m]):.0f} {m}_cpu_ms={statistics.median(cpu[m]):.0f}" for m in ms)
          + f" load={os.getloadavg()[0]:.1f}")


def parse_only(runs: dict[str, list[float]]) -> float:
    """grok's cost over dissect's, each net of the scan's (the medians): what the parse itself adds, rows included."""
    med = {v: statistics.median(runs[v]) for v in ("scan", "etl", "dissect")}
    net = med["dissect"] - med["scan"]
    return (med["etl"] - med["scan"]) / net if net > 0 else float("nan")


CPU: dict[str, float] = {}
BATCH_MS: dict[str, list[float]] = {}  # variant -> wall ms of each micro-batch with rows of its last run
VARIANTS = ("scan", "shape", "etl", "dissect", "etl_regex", "python_udf", "python_re")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per variant (the median counts)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--format", default="jsonl", choices=["jsonl", "csv", "parquet"], help="file sink format")
    ap.add_argument("--data", default=str(ROOT / "bench" / "data" / "access"), help="cached input folder")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    ap.add_argument("--small-batches", type=int, metavar="N", help="the fixed cost per micro-batch instead: N "
                    "batches of 10 lines, --repeat rounds (see small_batches)")
    args = ap.parse_args()
    variants = tuple(v for v in VARIANTS if v in args.variants.split(","))

    from etl.runtime.session import build_session

    if args.small_batches:
        spark = build_session("etl-bench-grok", args.master, {"spark.ui.enabled": "false"}, ui=False)
        try:
            small_batches(spark, args.small_batches, args.repeat)
        finally:
            spark.stop()
        return

    data = Path(args.data)
    size = make_data(data, args.lines)
    warm = Path(tempfile.mkdtemp(prefix="etl-bench-warm-"))
    make_data(warm / "input", 50_000)
    spark = build_session("etl-bench-grok", args.master, {"spark.ui.enabled": "false"}, ui=False)
    work = Path(tempfile.mkdtemp(prefix="etl-bench-"))
    try:
        for v in variants:  # JIT, codegen and Python workers warm up on a small input
            run_variant(spark, v, warm / "input", warm, args.format)
        times: dict[str, list[float]] = {v: [] for v in variants}
        cpus: dict[str, list[float]] = {v: [] for v in variants}
        for r in range(args.repeat):
            for v in variants:
                seconds, rows = run_variant(spark, v, data, work, args.format)
                if rows != args.lines:
                    raise SystemExit(f"{v}: wrote {rows} rows, expected {args.lines}")
                times[v].append(seconds)
                cpus[v].append(CPU[v])
                print(f"run {r + 1} {v:<10} {seconds:7.2f} s  {size / 1e6 / seconds:7.1f} MB/s  rows={rows}  "
                      f"cpu={CPU[v]:.1f} s", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(warm, ignore_errors=True)
    mb = size / 1e6
    rate = {v: mb / statistics.median(times[v]) for v in variants}
    cores = os.cpu_count() or 1
    by_cpu = {v: mb / (statistics.median(cpus[v]) / cores) for v in variants}
    print(f"cores={cores} master={args.master} format={args.format} load={os.getloadavg()[0]:.1f}")
    print("cpu-time based (MB per CPU-second x cores; less sensitive to other load): "
          + " ".join(f"{v}={by_cpu[v]:.1f}" for v in variants))
    if "dissect" in rate and "etl" in rate:
        print(f"dissect (the same layout, Dissect.java): {rate['dissect']:.1f} MB/s, grok (etl) {rate['etl']:.1f} MB/s, "
              f"dissect/grok end to end={rate['dissect'] / rate['etl']:.2f}x (cpu-time: "
              f"{by_cpu['dissect'] / by_cpu['etl']:.2f}x)")
        if "scan" in rate:
            print(f"dissect/grok parse only (each run minus scan's, which reads and writes the same lines unparsed): "
                  f"{parse_only(times):.2f}x (cpu-time: {parse_only(cpus):.2f}x)")
    for other, say in (("python_udf", ""), ("scan", ""), ("python_re", "the same expanded regex with Python re, in "
                       "mapInPandas"), ("shape", "no matching: the line cut at its first 10 spaces by split() into 11 "
                       "columns, rows of the grok's shape"), ("etl_regex", "ETL_GROK_PROGRAM=off: java.util.regex on "
                       "every line")):
        if other in rate and "etl" in rate:
            print(f"{other}{f' ({say})' if say else ''}: {rate[other]:.1f} MB/s, etl/{other}="
                  f"{rate['etl'] / rate[other]:.2f}x")
    print(f"grok lines={args.lines} mb={mb:.1f} " + " ".join(f"{v}_mb_s={rate[v]:.1f}" for v in variants))

if __name__ == "__main__":
    main()
