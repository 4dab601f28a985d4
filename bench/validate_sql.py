"""SQL script validation time next to YAML's: N copies of each pipelines/sql script and of its YAML twin.

    PYTHONPATH=. python bench/validate_sql.py [N_SCRIPTS]   (default 100)

Each copy gets its own pipeline name and output paths (so the cross-file checks pass) and is
checked by `etl.check.check_paths`, as `etl validate <folder>` does. Prints CPU and wall seconds
for the SQL copies and for the YAML copies (the first, cold, run: imports and caches included,
plus a warm second run). Target: 100 scripts in under 1 s of CPU (warm).
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _copies(n: int, work: Path) -> tuple[Path, Path]:
    src = sorted((ROOT / "pipelines" / "sql").glob("*.sql"))
    sql_dir, yaml_dir = work / "sql", work / "yaml"
    for d in (sql_dir, yaml_dir):
        d.mkdir(parents=True)
    shutil.copytree(ROOT / "pipelines" / "data", work / "data")
    for d in (sql_dir, yaml_dir):  # the Python functions and the data the scripts read beside them
        for module in (ROOT / "pipelines" / "sql").glob("*.py"):
            shutil.copy(module, d / module.name)
        if (ROOT / "pipelines" / "sql" / "data").is_dir():
            shutil.copytree(ROOT / "pipelines" / "sql" / "data", d / "data")
    for i in range(n):
        s = src[i % len(src)]
        for path, out_dir in ((s, sql_dir), (s.with_suffix(".yaml"), yaml_dir)):
            text = path.read_text()
            text = re.sub(r"(out/examples/sql/[\w/]+)", rf"\1_{i}", text)  # distinct outputs per copy
            text = re.sub(r"'(orders|big-orders|order_status|paid_orders)'", rf"'\1_{i}'", text)  # distinct topics/indexes
            text = re.sub(r"(topic: |index: |topics: \[)(orders|big-orders|order_status)", rf"\1\2_{i}", text)
            text = re.sub(r"(tableName = |'table-name' = )'(\w+)'", rf"\1'\2_{i}'", text)
            text = re.sub(r"SET 'checkpoint' = '([^']+)'", rf"SET 'checkpoint' = '\1_{i}'", text)
            text = re.sub(r"SET 'vars\.(topic|index)' = '([^']+)'", rf"SET 'vars.\1' = '\2_{i}'", text)
            text = re.sub(r"(\n  (?:topic|index): )([\w-]+)", rf"\1\2_{i}", text)  # a YAML twin's vars
            ids = set(re.findall(r"\bid: ([\w-]+)", text))  # a lookup's `table:` names a component: kept
            text = re.sub(r"(\n    table: |\n *checkpoint: |\n    database: )([\w./-]+)",
                          lambda m, i=i, ids=ids: m.group(0) if m.group(2) in ids else f"{m.group(1)}{m.group(2)}_{i}",
                          text)
            name = f"{s.stem.replace('_', '-')}-{i}"
            if path.suffix == ".sql":
                text = re.sub(r"SET 'pipeline.name' = '[^']*';", "", text)
                text = f"SET 'pipeline.name' = '{name}';\n" + text
            else:
                text = re.sub(r"(?m)^name: .*$", f"name: {name}", text)
            (out_dir / f"{s.stem}_{i}{path.suffix}").write_text(text.replace("../data/", "../data/"))
    return sql_dir, yaml_dir


def _time(folder: Path) -> tuple[float, float, int, int]:
    from etl.check import check_paths, pipeline_files

    files = pipeline_files([folder])
    c0, w0 = time.process_time(), time.perf_counter()
    results = check_paths(files, environ={})
    c1, w1 = time.process_time(), time.perf_counter()
    bad = [d.render() for r in results for d in r.report.errors]
    if bad:
        raise SystemExit("invalid copies:\n" + "\n".join(bad[:5]))
    return c1 - c0, w1 - w0, len(files), sum(len(r.pipeline.components()) for r in results)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    work = Path(tempfile.mkdtemp(prefix="etl-bench-sql-"))
    try:
        sql_dir, yaml_dir = _copies(n, work)
        rows = []
        for label, folder in (("sql (cold)", sql_dir), ("yaml (cold)", yaml_dir), ("sql (warm)", sql_dir),
                              ("yaml (warm)", yaml_dir)):
            cpu, wall, files, comps = _time(folder)
            rows.append((label, files, comps, cpu, wall))
        print(f"{'front-end':<12} {'files':>5} {'components':>10} {'cpu s':>7} {'wall s':>7} {'ms/file':>8}")
        for label, files, comps, cpu, wall in rows:
            print(f"{label:<12} {files:>5} {comps:>10} {cpu:>7.3f} {wall:>7.3f} {1000 * cpu / files:>8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
