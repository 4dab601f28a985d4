#!/usr/bin/env python3
"""Lookup join against a large dimension table in rocksdict stores.

    .venv/bin/python bench/lookup.py --rows 10000000 --events 1000000

1. builds an R-row dimension table as CSV (id, name, country, segment, score; cached in bench/data);
2. loads it as the `lookup` transform does when its pipeline starts (store: rocksdb): the
   rocksdict store built on this host (SST sorted by key hash, zstd, ingest), then read into
   the JVM (etl/jvm/LookupTables.java; on a local master the lookups run there);
3. joins M events: an etl pipeline run with --once -- the seeded generator (user ids
   uniform over 1.1 R, so ~9% miss), `lookup` (how: left, store: rocksdb) adding four
   columns, the file sink (parquet).
Figures: csv_mb and store_mb (files on disk), load_s (step 2: store build + JVM load, each
also printed apart), events_per_s = M / wall time of step 3, the median of --repeat runs
(after a warm-up run on 50,000 events), rss_mb = peak resident memory of the processes that
hold the table: this driver, the JVM (whose heap is committed at start: 2 GB of it is there
with or without a table) and Spark's Python workers, sampled every 0.2 s. Last line:

    lookup rows=R csv_mb=A store_mb=B rss_mb=C load_s=D events_per_s=E
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import shutil
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PIPELINE = """\
    name: bench-lookup
    sources:
      - id: events
        type: generator
        count: {count}
        seed: 5
        rows_per_batch: {batch}
        fields:
          ts: {{timestamp: event}}
          user_id: {{int_range: [0, {max_id}]}}
          action: {{choice: [view, click, buy]}}
      - id: users
        type: file
        path: {csv}
        format: csv
        static: true
        schema: {{id: string, name: string, country: string, segment: string, score: double}}
    transforms:
      - id: enriched
        type: lookup
        input: events
        table: users
        on: {{user_id: id}}
        how: left
        store: rocksdb
    sinks:
      - {{id: out, type: file, input: enriched, path: {output}, format: parquet}}
    checkpoint: {checkpoint}
"""


def make_csv(path: Path, rows: int) -> None:
    """R rows, written in chunks with pyarrow (cached: kept when the row count matches)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    stamp = path.with_suffix(f".rows-{rows}")
    if path.exists() and stamp.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)
    countries = np.array(["US", "DE", "FR", "CN", "BR", "IN", "JP", "GB", "NL", "ES"])
    segments = np.array(["free", "pro", "team", "enterprise"])
    chunk = 1_000_000
    with pcsv.CSVWriter(str(path), pa.schema([("id", pa.string()), ("name", pa.string()), ("country", pa.string()),
                                              ("segment", pa.string()), ("score", pa.float64())])) as w:
        for lo in range(0, rows, chunk):
            n = min(chunk, rows - lo)
            ids = np.arange(lo, lo + n)
            w.write_table(pa.table({
                "id": pa.array(ids.astype(str)),
                "name": pa.array(np.char.add("user-", (ids * 7919 % 1_000_003).astype(str))),
                "country": pa.array(countries[rng.integers(0, len(countries), n)]),
                "segment": pa.array(segments[rng.integers(0, len(segments), n)]),
                "score": pa.array(np.round(rng.random(n) * 100, 2)),
            }))
    stamp.touch()


class RssSampler:
    """Peak of the summed RSS of this process and every Python or Java process below it (the JVM, Spark's
    Python workers)."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _procs() -> dict[int, tuple[int, str, int]]:
        out = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/status") as fh:
                    fields = dict(line.split(":", 1) for line in fh if ":" in line)
                rss = int(fields.get("VmRSS", "0 kB").split()[0])
                out[int(d)] = (int(fields["PPid"]), fields["Name"].strip(), rss)
            except (OSError, KeyError, ValueError):
                continue
        return out

    def sample(self) -> None:
        procs = self._procs()
        me = os.getpid()
        total = procs.get(me, (0, "", 0))[2]
        for pid, (_, name, rss) in procs.items():
            if pid == me or not name.startswith(("python", "java")):
                continue
            p = procs[pid][0]
            while p and p != me and p in procs:
                p = procs[p][0]
            if p == me:
                total += rss
        self.peak_mb = max(self.peak_mb, total / 1024)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            self.sample()

    def __enter__(self) -> RssSampler:
        self._t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._t.join()
        self.sample()


def pipeline(work: Path, csv: Path, count: int, batch: int, rows: int) -> Any:
    from etl.check import check_file

    p = work / "bench_lookup.yaml"
    p.write_text(textwrap.dedent(PIPELINE.format(count=count, batch=batch, max_id=int(rows * 1.1), csv=csv,
                                                 output=work / "out", checkpoint=work / "ckpt")))
    c = check_file(p, programs=True, allow_paths=[csv.parent])  # the table is generated under bench/data
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    return c.plan


def load(spark: Any, plan: Any) -> tuple[float, float, float]:
    """Build the store the pipeline's lookup will use and load it as the lookup does when its pipeline is
    compiled (into the JVM on a local master); returns (build seconds, total seconds, store MB)."""
    from etl.compile.context import CompileContext
    from etl.compile.lookups.dimension import lookup_join
    from etl.compile.lookups.store import default_base_dir, dir_mb, ensure_version, source_version
    from etl.components.transforms.lookup.build import dimension

    node = plan.graph.node("enriched")
    ctx = CompileContext(spark, plan.graph)
    dim, _ = dimension(ctx, node)
    events = spark.createDataFrame([], "ts timestamp, user_id bigint, action string")
    base_dir = os.path.join(default_base_dir(), plan.graph.name, node.id)
    t = time.perf_counter()
    res = lookup_join(events, dim, node.spec, spark=spark, base_dir=base_dir)
    total = time.perf_counter() - t
    t = time.perf_counter()
    dest = ensure_version(res.source, source_version(res.source))  # built: how long the build took is in its meta
    build = json.loads((dest / "meta.json").read_text())["build_s"] + (time.perf_counter() - t)
    return build, total, dir_mb(dest / "db")


def join(spark: Any, plan: Any, work: Path) -> float:
    from etl.runtime.runner import PipelineRun, RunOptions

    shutil.rmtree(work / "out", ignore_errors=True)
    shutil.rmtree(work / "ckpt", ignore_errors=True)
    runner = PipelineRun(plan, spark, RunOptions(once=True, progress="none", echo=lambda s: None))
    t = time.perf_counter()
    runner.start()
    runner.wait()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=500_000, help="generator rows per micro-batch")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3, help="timed join runs (the median is reported)")
    ap.add_argument("--data", default=str(ROOT / "bench" / "data"), help="folder of the cached CSV")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="etl-bench-lookup-"))
    os.environ["ETL_LOOKUP_DIR"] = str(work / "stores")
    csv = Path(args.data) / f"users-{args.rows}.csv"
    t = time.perf_counter()
    make_csv(csv, args.rows)
    print(f"table: {csv} ({time.perf_counter() - t:.1f} s)", flush=True)
    csv_mb = csv.stat().st_size / 1e6

    from etl.runtime.session import build_session

    spark = build_session("etl-bench-lookup", args.master, {"spark.ui.enabled": "false"}, ui=False)
    try:
        with RssSampler() as rss:
            build_s, load_s, store_mb = load(spark, pipeline(work, csv, args.events, args.batch, args.rows))
            print(f"load: {load_s:.1f} s (store build {build_s:.1f} s, then into the JVM), store {store_mb:.1f} MB "
                  f"(csv {csv_mb:.1f} MB)", flush=True)
            join(spark, pipeline(work, csv, 50_000, 50_000, args.rows), work)  # warm-up
            runs = []
            for r in range(args.repeat):
                runs.append(join(spark, pipeline(work, csv, args.events, args.batch, args.rows), work))
                print(f"join {r + 1}: {runs[-1]:.2f} s for {args.events:,} events "
                      f"({args.events / runs[-1]:,.0f} events/s)", flush=True)
            seconds = statistics.median(runs)
        import pyarrow.parquet as pq

        rows = sum(pq.read_metadata(f).num_rows for f in (work / "out").glob("*.parquet"))
        if rows != args.events:
            raise SystemExit(f"wrote {rows} rows, expected {args.events} (how: left keeps every event)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"cores={os.cpu_count()} master={args.master} batch={args.batch}")
    print(f"lookup rows={args.rows} csv_mb={csv_mb:.1f} store_mb={store_mb:.1f} rss_mb={rss.peak_mb:.0f} "
          f"load_s={load_s:.1f} events_per_s={args.events / seconds:.0f}")


if __name__ == "__main__":
    main()
