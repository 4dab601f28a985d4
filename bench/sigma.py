"""Benchmark: the SigmaHQ Windows process-creation rules over M events in Spark -- etl's Sigma filter (tag mode)
vs the same rules as one Spark SQL tagging expression from pySigma's Databricks backend vs a scan.

    .venv/bin/python bench/sigma.py --events 1000000 [--scope process_creation|windows] [--repeat 3] [--corpus DIR]

Rules: `--corpus DIR` names a copy of SigmaHQ/sigma, the folder holding `rules/` (default $ETL_SIGMA_CORPUS,
else `<repo>/../shared/sigma`; the repository carries 150 rules only, tests/fixtures/sigma_corpus); scope
process_creation is rules/windows/process_creation (selected by logsource windows/process_creation), scope
windows every rule of rules/ whose logsource product is windows. Events: M reproducible Sysmon process-creation events
(bench/_sigma_gen.py), 1 % of them built to match one of the rules (from pySigma's parsed detection, by
tests/sigma_rules/pysigma_oracle.py), as jsonl files kept under $TMPDIR/etl-bench-sigma.

Variants (AvailableNow queries through etl's compile path into Spark's noop
sink, as bench/filter.py; medians of --repeat runs after a warm-up):

* etl: file source -> filter with `sigma:` in tag mode (matched rules with id, title, level, tags) -> noop;
* spark_sql: the scan's frame plus one column ``filter(array(CASE WHEN <rule> THEN '<id>' END, ...), x -> x IS
  NOT NULL)``, each rule's condition converted by pySigma's Databricks backend. That backend pins pySigma < 2,
  so it runs in its own virtual environment (--dbx-python; created under $TMPDIR/etl-bench-sigma/dbx with pip
  when absent). It runs in a child process with its own SparkSession (a plan this large can leave the JVM out
  of memory); when Spark cannot run it with every rule, the bench reports `fail` and halves the rule count
  until it runs (`largest spark_sql rule count that runs`);
* scan: file source -> noop.

Last line: ``sigma rules=N events=M etl_s=X spark_sql_s=Y scan_s=Z``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _bench_off() -> None:
    """This file is named like pySigma's package, `sigma`, a namespace package, which any module of that name on
    the path shadows: the bench folder leaves the path once its helpers are imported."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]


sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from _sigma_gen import FIELDS, make_events  # noqa: E402
from filter import checked_plan, cpu, runner  # noqa: E402

_bench_off()
WORK = Path(tempfile.gettempdir()) / "etl-bench-sigma"
DATA_VERSION = 1
CONVERT = """
import json, sys
from sigma.collection import SigmaCollection
from sigma.backends.databricks import DatabricksBackend
backend = DatabricksBackend()
out = []
for f in json.load(sys.stdin):
    try:
        out.append([f, backend.convert(SigmaCollection.load_ruleset([f]))])
    except Exception as e:
        out.append([f, str(e)])
json.dump(out, sys.stdout)
"""


def default_corpus() -> str:
    return os.environ.get("ETL_SIGMA_CORPUS") or str(ROOT.parent / "shared" / "sigma")


def selection(scope: str, corpus: str) -> tuple[list[str], dict]:
    rules = Path(corpus) / "rules"
    if not rules.is_dir():
        raise SystemExit(f"the SigmaHQ corpus is missing: expected {rules} (--corpus DIR names a copy of "
                         "SigmaHQ's rule repository; the 150 test rules in tests/fixtures are too few to measure)")
    from etl.load.paths import allow_paths

    allow_paths([rules])  # the pipelines this bench writes read the corpus where it is (etl's --allow-path)
    if scope == "process_creation":
        return [str(rules / "windows" / "process_creation")], {"product": "windows", "category": "process_creation"}
    return [str(rules)], {"product": "windows"}


def selected_files(paths: list[str], select: dict) -> list[tuple[str, str]]:
    """(file, etl rule id) of the rules etl loads, in its order."""
    from etl.diagnostics import Report, Span
    from etl.load.sigma import load_sigma
    from etl.spec.sigma import SigmaSpec

    rules = load_sigma(SigmaSpec(paths=paths, select=select), lambda *k: Span("bench"), ".", Report())
    return [(r.file, r.rule.id) for r in rules]


def crafted_events(files: list[str], limit: int = 400) -> list[dict]:
    from sigma.rule import SigmaRule

    from tests.sigma_rules.pysigma_oracle import matching_event

    out = []
    for f in files[::max(1, len(files) // limit)]:
        try:
            e = matching_event(SigmaRule.from_yaml(Path(f).read_text()), tries=10)
        except Exception:  # noqa: BLE001 - a rule this generator cannot satisfy gives no event
            e = None
        if e is not None:
            out.append({k: (None if v is None else str(v)) for k, v in e.items()})
    return out


def events_dir(m: int, seed: int, files: int, scope: str, rule_files: list[str], fresh: bool) -> Path:
    root = WORK / f"events-v{DATA_VERSION}-{scope}-{m}-{seed}-{files}"
    if root.is_dir() and not fresh:
        return root
    shutil.rmtree(root, ignore_errors=True)
    tmp = root.with_name(root.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True)
    events = make_events(m, seed, crafted_events(rule_files))
    per = -(-m // files)
    for k in range(files):
        (tmp / f"part-{k:03d}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events[k * per:(k + 1) * per]))
    os.replace(tmp, root)
    return root


def rule_fields(paths: list[str], select: dict) -> list[str]:
    """The fields the selected rules read (the events' schema declares them all: a field the events lack is
    null, and no rule is left out for reading a column the schema does not have)."""
    from etl.diagnostics import Report, Span
    from etl.load.sigma import load_sigma
    from etl.spec.sigma import SigmaSpec

    rules = load_sigma(SigmaSpec(paths=paths, select=select), lambda *k: Span("bench"), ".", Report())
    return sorted({f for r in rules for f, _ in r.fields if "." not in f})


def write_pipelines(folder: Path, data: Path, paths: list[str], select: dict) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    by_lower: dict[str, str] = {}  # Spark resolves columns case-insensitively: one of Payload and payload
    for f in list(FIELDS) + rule_fields(paths, select):
        by_lower.setdefault(f.lower(), f)
    schema = "{" + ", ".join(f"{json.dumps(f)}: string" for f in by_lower.values()) + "}"
    source = f"sources: [{{id: src, type: file, path: {json.dumps(str(data))}, format: jsonl, schema: {schema}}}]\n"
    etl = folder / "sigma.yaml"
    etl.write_text("name: bench-sigma\n" + source + "transforms: [{id: f, type: filter, input: src, mode: tag, "
                   f"sigma: {{paths: {json.dumps(paths)}, select: {json.dumps(select)}}}}}]\n"
                   "sinks: [{id: out, type: file, input: f, path: out}]\n")
    scan = folder / "scan.yaml"
    scan.write_text("name: bench-sigma-scan\n" + source + "sinks: [{id: out, type: file, input: src, path: out}]\n")
    return etl, scan


def dbx_python(given: str | None) -> str:
    if given:
        return given
    venv = WORK / "dbx"
    py = venv / "bin" / "python"
    if not py.exists():
        print(f"creating {venv} with pysigma-backend-databricks (it pins pySigma < 2)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "pysigma-backend-databricks"], check=True)
    return str(py)


def databricks_sql(files: list[str], python: str) -> dict[str, str]:
    """file -> the Databricks backend's Spark SQL condition (files it cannot convert are left out)."""
    import hashlib

    key = hashlib.sha256(json.dumps(files).encode()).hexdigest()[:16]
    cache = WORK / f"databricks-{key}.json"
    if not cache.exists():
        res = subprocess.run([python, "-c", CONVERT], input=json.dumps(files), capture_output=True, text=True,
                             check=True)
        cache.write_text(res.stdout)
    out = {}
    for f, got in json.loads(cache.read_text()):
        if isinstance(got, list) and len(got) == 1:
            out[f] = got[0]
    return out


def tag_expression(conds: list[tuple[str, str]]) -> Any:
    from pyspark.sql import functions as F

    cases = [F.when(F.expr(sql), F.lit(rid)) for rid, sql in conds]
    return F.filter(F.array(*cases), lambda x: x.isNotNull())


def sql_child(args: Any, n: int) -> None:
    """--spark-sql-child N: time the Databricks backend's tagging expression of the first N rules in this
    process's own SparkSession (a failing expression may leave the JVM out of memory); prints one JSON line."""
    paths, select = selection(args.scope, args.corpus)
    chosen = selected_files(paths, select)
    data = events_dir(args.events, args.seed, args.files, args.scope, [f for f, _ in chosen], False)
    sql = databricks_sql([f for f, _ in chosen], dbx_python(args.dbx_python))
    conds = [(rid, sql[f]) for f, rid in chosen if f in sql][:n]
    work = Path(tempfile.mkdtemp(prefix="etl-bench-sigma-sql-"))
    _etl, scan_yaml = write_pipelines(work, data, paths, select)
    from etl.runtime.session import build_session

    spark = build_session("bench-sigma-sql", args.master, {"spark.ui.enabled": "false"}, ui=False)
    expr = tag_expression(conds)
    fn = runner(spark, checked_plan(scan_yaml), work, "spark_sql", lambda df: df.withColumn("matched_rules", expr))
    fn()  # warm-up
    times = [fn() for _ in range(args.repeat)]
    spark.stop()
    print(json.dumps({"rules": len(conds), "times": times, "cpu": cpu["spark_sql"][1:]}), flush=True)


def spark_sql(args: Any, total: int) -> tuple[dict | None, str | None]:
    """Run the tagging expression with all `total` rules (in a child process); on failure halve the count until
    it runs. Returns (the result of the largest count that ran, the failure with all rules or None)."""
    n, failure = total, None
    while n >= 1:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--spark-sql-child", str(n), "--events",
               str(args.events), "--scope", args.scope, "--repeat", str(args.repeat), "--seed", str(args.seed),
               "--files", str(args.files), "--master", args.master, "--corpus", args.corpus]
        cmd += ["--dbx-python", args.dbx_python] if args.dbx_python else []
        # its own process group: on a timeout the child's JVM goes too
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            out, err = child.communicate(timeout=args.sql_timeout)
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            if child.returncode == 0 and lines:
                return json.loads(lines[-1]), failure
            tail = [ln for ln in (err or "").splitlines() if "Error" in ln or "Exception" in ln]
            why = (tail[0] if tail else f"exit {child.returncode}")[:200]
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            why = f"no result within {args.sql_timeout} s"
        print(f"spark_sql with {n} rules: fail ({why})", flush=True)
        failure = failure or why
        n //= 2
    return None, failure


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--scope", choices=["process_creation", "windows"], default="process_creation")
    ap.add_argument("--corpus", default=default_corpus(), help="a copy of SigmaHQ/sigma (the folder holding rules/)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--skip-spark-sql", action="store_true")
    ap.add_argument("--sql-timeout", type=float, default=1800, help="seconds for one spark_sql attempt")
    ap.add_argument("--dbx-python", help="python of a venv with pysigma-backend-databricks")
    ap.add_argument("--spark-sql-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.spark_sql_child:
        return sql_child(args, args.spark_sql_child)

    paths, select = selection(args.scope, args.corpus)
    t = time.perf_counter()
    chosen = selected_files(paths, select)
    print(f"rules: {len(chosen)} loaded by etl ({time.perf_counter() - t:.1f} s)", flush=True)
    t = time.perf_counter()
    data = events_dir(args.events, args.seed, args.files, args.scope, [f for f, _ in chosen], args.fresh)
    mb = sum(f.stat().st_size for f in data.iterdir()) / 1e6
    print(f"events: {args.events} in {args.files} files, {mb:.1f} MB ({data}; {time.perf_counter() - t:.1f} s)",
          flush=True)
    work = Path(tempfile.mkdtemp(prefix="etl-bench-sigma-"))
    etl_yaml, scan_yaml = write_pipelines(work, data, paths, select)
    t = time.perf_counter()
    plan = checked_plan(etl_yaml)
    print(f"etl plan (load, validate, compile): {time.perf_counter() - t:.1f} s", flush=True)
    program = plan.step("f").program
    print(f"program: {len(program.rules)} rules, {len(program.predicates)} predicates, "
          f"{sum(len(d.patterns) for d in program.databases)} Hyperscan patterns, {len(program.fallbacks)} python "
          f"fallbacks", flush=True)
    scan_plan = checked_plan(scan_yaml)

    from etl.runtime.session import build_session

    spark = build_session("bench-sigma", args.master, {"spark.ui.enabled": "false"}, ui=False)
    variants = {"scan": runner(spark, scan_plan, work, "scan"), "etl": runner(spark, plan, work, "etl")}
    times: dict[str, list[float]] = {k: [] for k in variants}
    for fn in variants.values():
        fn()  # warm-up
    for r in range(args.repeat):
        for k, fn in variants.items():
            times[k].append(fn())
        print(f"run {r + 1}: " + "  ".join(f"{k} {v[-1]:.2f} s ({cpu[k][-1]:.1f} cpu-s)"
                                                for k, v in times.items() if v), flush=True)
    spark.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    x, z = med["etl"], med["scan"]
    print(f"scan/etl = {z / x:.2f}; cpu-s medians: "
          + "  ".join(f"{k} {statistics.median(cpu[k][1:]):.1f}" for k in variants), flush=True)
    y_text = "skipped"
    if not args.skip_spark_sql:
        sql = databricks_sql([f for f, _ in chosen], dbx_python(args.dbx_python))
        total = sum(1 for f, _ in chosen if f in sql)
        print(f"spark_sql: {total} rules converted by the Databricks backend", flush=True)
        got, failure = spark_sql(args, total)
        if got is not None:
            y = statistics.median(got["times"])
            print(f"spark_sql with {got['rules']} rules: {y:.2f} s ({statistics.median(got['cpu']):.1f} cpu-s); "
                  f"spark_sql/etl = {y / x:.2f}", flush=True)
            if failure is None:
                y_text = f"{y:.2f}"
            else:
                print(f"largest spark_sql rule count that runs: {got['rules']}", flush=True)
        y_text = "fail" if failure is not None else y_text
    print(f"sigma rules={len(program.rules)} events={args.events} etl_s={x:.2f} spark_sql_s={y_text} scan_s={z:.2f}")


if __name__ == "__main__":
    main()
