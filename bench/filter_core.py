"""Micro-benchmark of the filter core (pure Python + pyarrow + Hyperscan, no Spark).

Generates M reproducible JSON-like events with a ``cmd`` command line and N
reproducible regex rules over it (IOC literals, classes, alternations, caseless
and word-bounded tokens, typical security patterns such as ``curl .*\\| *sh``),
compiles them, runs the matcher over Arrow batches and prints events/s and MB/s
(MB of the events' JSON text). The last line is machine-readable:

    filter_core rules=N events=M events_per_s=X mb_s=Y

Usage: python bench/filter_core.py --rules 10000 --events 200000 [--batch 10000] [--seed 7] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa  # noqa: E402

from _gen import make_events, make_rules  # noqa: E402
from etl.matching.matcher import Matcher  # noqa: E402
from etl.optimize import compile_rules  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", type=int, default=1000)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="timed passes over the events; the best is reported")
    args = ap.parse_args(argv)

    rules = make_rules(args.rules, args.seed)
    events = make_events(args.events, args.seed)
    mb = sum(len(json.dumps(e)) + 1 for e in events) / 1e6
    batches = [pa.RecordBatch.from_pylist(events[i:i + args.batch]) for i in range(0, len(events), args.batch)]

    t0 = time.perf_counter()
    program = compile_rules(rules)
    t_compile = time.perf_counter() - t0
    db_bytes = sum(len(d.serialized or b"") for d in program.databases)
    prefilter = sum(1 for d in program.databases for p in d.patterns if p.ascii_rows != "exact")
    print(f"compiled {len(rules)} rules in {t_compile:.2f} s: {sum(len(d.patterns) for d in program.databases)} "
          f"Hyperscan patterns ({db_bytes} bytes), {prefilter} prefilter, {len(program.fallbacks)} python fallbacks")

    matcher = Matcher(program)
    matcher.match(batches[0])  # load the database and scratch once (per process)
    best = cpu = float("inf")
    for _ in range(args.repeat):  # best of N passes: the machine may be shared
        matched_events = matched_pairs = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for b in batches:
            res = matcher.match(b)
            matched_events += int(res.mask().sum())
            matched_pairs += len(res.rows)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    dt = best
    cache = matcher.cache
    print(f"matched {matched_events} events ({matched_pairs} rule matches); "
          f"fingerprint cache {'on' if cache and cache.enabled else 'off'} "
          f"(hit rate {cache.hit_rate if cache else 0:.2f})")
    print(f"{args.events / dt:,.0f} events/s, {mb / dt:.1f} MB/s ({mb:.1f} MB in {dt:.2f} s wall, "
          f"{cpu:.2f} s CPU; best of {args.repeat})")
    print(f"filter_core rules={args.rules} events={args.events} events_per_s={args.events / dt:.0f} mb_s={mb / dt:.1f}")


if __name__ == "__main__":
    main()
