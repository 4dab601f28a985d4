"""Harness: the Sigma filter's JVM matching alone (etl.jvm.RuleMatch.idsRow) over bench/sigma.py's events,
outside Spark, on one thread: CPU microseconds per event and a digest of the matched ids.

    .venv/bin/python bench/sigma_match.py [--events 200000] [--scope process_creation|windows] [--passes 5]
        [--corpus DIR] [--ids FILE] [--jvm-opt=-XX:StartFlightRecording=filename=x.jfr]

Needs bench/sigma.py's events (run it once with the same --scope). The program file is the one etl's compile
path writes for the bench's pipeline (etl.compile.rules_jvm_multi.plan_of); each event's row holds the
program's fields as the bench's schema reads them (a field the events lack is null). `--ids` keeps each
event's ids (a line per event) to compare two versions of the matcher: same digest, same ids.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]


def _bench() -> Any:
    """bench/sigma.py, under another name than pySigma's package `sigma`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sigma_bench", ROOT / "bench" / "sigma.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rows(data: Path, fields: tuple[str, ...], m: int) -> str:
    import json

    out: list[str] = []
    for part in sorted(data.iterdir()):
        with part.open() as fh:
            for line in fh:
                if len(out) == m:
                    return "\n".join(out) + "\n"
                e = {k.lower(): v for k, v in json.loads(line).items()}
                vals = [e.get(f.lower()) for f in fields]
                out.append("\t".join("~" if v is None else str(v).encode("utf-8").hex() for v in vals))
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--scope", choices=["process_creation", "windows"], default="process_creation")
    ap.add_argument("--corpus", default=_bench().default_corpus(), help="a copy of SigmaHQ/sigma (holding rules/)")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--ids", help="write each event's ids here")
    ap.add_argument("--jvm-opt", action="append", default=[])
    args = ap.parse_args(argv)

    bench = _bench()
    from etl.compile import jvm
    from etl.compile.rules_jvm_multi import plan_of

    paths, select = bench.selection(args.scope, args.corpus)
    chosen = bench.selected_files(paths, select)
    data = bench.events_dir(1_000_000, 7, 8, args.scope, [f for f, _ in chosen], False)
    work = Path(tempfile.mkdtemp(prefix="etl-sigma-match-"))
    etl_yaml, _scan = bench.write_pipelines(work, data, paths, select)
    program = bench.checked_plan(etl_yaml).step("f").program
    plan = plan_of(program)
    if plan.body is None:
        raise SystemExit(f"the rule set is not decided in the JVM: {plan.reason}")
    (work / "program.txt").write_text(plan.body)
    (work / "rows.txt").write_text(rows(data, plan.fields, args.events))
    jar = jvm.jar()
    if jar is None:
        raise SystemExit(f"no etl jar: {jvm.unavailable_reason()}")
    import pyspark

    cp = f"{Path(pyspark.__file__).parent / 'jars'}/*:{jar}:{work}"
    subprocess.run(["javac", "-nowarn", "-d", str(work), "-cp", cp, str(ROOT / "bench" / "SigmaMatch.java")],
                   check=True)
    print(f"{len(program.rules)} rules, {len(plan.fields)} fields, {plan.needles} needles, "
          f"{len(plan.regexes)} patterns; jar {jar.name}", flush=True)
    ids = args.ids or str(work / "ids.txt")
    cmd = ["java", *args.jvm_opt, "-cp", cp, "SigmaMatch", str(work / "program.txt"), str(work / "rows.txt"),
           str(args.passes), ids]
    print(" ".join(cmd), flush=True)  # to run again (e.g. alternating with another version's)
    subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
