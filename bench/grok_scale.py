#!/usr/bin/env python3
"""grok at scale: a pipeline of many grok patterns, from the YAML to its first micro-batch.

    .venv/bin/python bench/grok_scale.py --transforms 100                  # 100 grok transforms, one union, one sink
    .venv/bin/python bench/grok_scale.py --transforms 100 --shape one      # one grok of 100 alternatives

Shapes: `branches`: N grok transforms on one text source (each its own pattern: an access-log line whose path
starts with its number), their outputs unioned into one file sink (each grok's dead letters to the default
dead-letter sink); `one`: a single grok transform whose pattern is the N patterns as alternatives after their common
prefix (the line's parse shared, the catch-all last). Printed, in
seconds: validate (etl.check.check_file: load, graph, optimizer, physical plan, grok programs), explain (the
text of the physical plan), build (the PySpark DataFrames and queries), first_batch (query start to its first
committed micro-batch: Spark's analysis, optimizer, codegen and the batch itself). The last line is
machine-readable:

    grok_scale shape=S transforms=N validate_s=V explain_s=E build_s=B first_batch_s=F rows=R
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.gen_access_log import lines as access_lines  # noqa: E402

BASE = r'^%{IPORHOST:client} %{USER:ident} %{USER:auth} \[%{HTTPDATE:ts}\] "%{WORD:verb} '


def pattern(i: int) -> str:
    return BASE + f"(?<path>/{i}[^ ]*)" if i else BASE + "(?<path>[^ ]*)"  # the first takes every line


def pipeline(shape: str, n: int, data: Path, work: Path) -> str:
    q = lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'  # noqa: E731
    if shape == "branches":
        groks = [f"  - {{id: g{i}, type: grok, input: logs, field: line, pattern: {q(pattern(i))}}}" for i in range(n)]
        union = f"  - {{id: all, type: union, inputs: [{', '.join(f'g{i}' for i in range(n))}]}}"
        transforms, last = "\n".join(groks + [union]), "all"
    else:
        alts = "(?:" + "|".join(pattern(i)[len(BASE):] for i in range(1, n)) + "|" + pattern(0)[len(BASE):] + ")"
        transforms, last = f"  - {{id: g, type: grok, input: logs, field: line, pattern: {q(BASE + alts)}}}", "g"
    return "\n".join([
        "name: grok-scale",
        "sources:",
        f"  - {{id: logs, type: file, path: {data}, format: text}}",
        "transforms:",
        transforms,
        "sinks:",
        f"  - {{id: out, type: file, input: {last}, path: {work / 'out'}, format: jsonl}}",
        f"checkpoint: {work / 'ckpt'}",
        ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transforms", type=int, default=100)
    ap.add_argument("--shape", choices=["branches", "one"], default="branches")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    from etl.check import check_file
    from etl.physical.explain import explain_text
    from etl.physical import physical_plan, planner_settings

    work = Path(tempfile.mkdtemp(prefix="etl-grok-scale-"))
    try:
        data = work / "in"
        data.mkdir()
        (data / "part-0.log").write_text("\n".join(access_lines(args.lines, seed=1)) + "\n")
        p = work / "p.yaml"
        p.write_text(pipeline(args.shape, args.transforms, data, work))
        t0 = time.perf_counter()
        c = check_file(p, programs=True)
        validate_s = time.perf_counter() - t0
        assert c.plan is not None, [d.render() for d in c.report.sorted()][:5]
        print(f"validate: {validate_s:.2f} s ({args.transforms} patterns, shape {args.shape})", flush=True)
        t0 = time.perf_counter()
        text = explain_text(c.plan, physical_plan(c.plan, planner_settings(master=args.master))).splitlines()
        explain_s = time.perf_counter() - t0
        print(f"explain: {explain_s:.2f} s ({len(text)} lines)", flush=True)

        from etl.runtime.runner import PipelineRun, RunOptions
        from etl.runtime.session import build_session

        spark = build_session(master=args.master, app_name="grok-scale")
        run = PipelineRun(c.plan, spark, RunOptions(once=True, progress="none"))
        t0 = time.perf_counter()
        run.start()
        started = time.perf_counter()
        build_s = started - t0
        print(f"build: {build_s:.2f} s (DataFrames and queries)", flush=True)
        run.wait()
        first_s = time.perf_counter() - started
        rows = sum(1 for f in (work / "out").rglob("*.jsonl") for _ in f.open())
        print(f"first batch: {first_s:.2f} s ({rows} rows)", flush=True)
        print(f"grok_scale shape={args.shape} transforms={args.transforms} validate_s={validate_s:.2f} "
              f"explain_s={explain_s:.2f} build_s={build_s:.2f} first_batch_s={first_s:.2f} rows={rows}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
