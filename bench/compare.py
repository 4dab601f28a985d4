"""Benchmarks of two commits side by side: each benchmark runs for the base and the head in turn, round after round
(A B A B ...), so both see the same machine; medians and head/base ratios of every figure of its last line.

    .venv/bin/python bench/compare.py --base HEAD~1                  # the working tree against its parent
    .venv/bin/python bench/compare.py --base 55ddcc7 --head main --rounds 5 --only filter,grok
    .venv/bin/python bench/compare.py --base v0.1.0 --bench "window.py --events 200000 --repeat 1"

A commit other than the working tree is checked out once under $TMPDIR/etl-compare/<sha> (`git worktree add
--detach`, java/lib linked to this checkout's) and its benchmark runs with `PYTHONPATH=<that tree>` and this
interpreter, so both sides share the installed dependencies and differ only in etl's code (etl's jar: each tree
builds its own from its sources on first use, outside the timed runs since every benchmark warms up).

The default set is issue 39's: filter, grok, window, lookup, the file sink and Sigma (the repository's 150 test rules),
each at a size that runs in about a minute. A benchmark's figures are the `key=value` numbers of its last line;
the output is one table per benchmark: figure, base median, head median, head/base.

Last line: ``compare base=<sha> head=<sha|worktree> rounds=N benchmarks=K``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = {
    "filter": "filter.py --rules 1000 --events 300000 --repeat 1 --skip-naive",
    "grok": "grok.py --lines 200000 --repeat 1 --variants etl",
    "window": "window.py --events 300000 --batch 150000 --repeat 1 --variants count,update",
    "lookup": "lookup.py --rows 1000000 --events 300000 --batch 150000 --repeat 1",
    "sinks": "sinks.py file --events 300000 --repeat 1",
    "sigma": "sigma.py --events 200000 --repeat 1 --corpus tests/fixtures/sigma_corpus --skip-spark-sql",
}
FIGURE = re.compile(r"([A-Za-z_][\w.]*)=(-?\d+(?:\.\d+)?)(?=\s|$)")


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def tree_of(rev: str | None) -> tuple[str, Path]:
    """(label, folder) of `rev`: None is the working tree itself, else a detached checkout kept under $TMPDIR."""
    if rev is None:
        return "worktree", ROOT
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    folder = Path(tempfile.gettempdir()) / "etl-compare" / sha[:12]
    if not (folder / "etl").is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(folder), sha],
                       check=True, capture_output=True)
    lib = ROOT / "java" / "lib"
    if lib.exists() and not (folder / "java" / "lib").exists():
        (folder / "java" / "lib").symlink_to(lib)
    return sha[:12], folder


def run_once(folder: Path, command: str) -> tuple[dict[str, float], float]:
    """The figures of one run's last line and its wall seconds; a failing run is an error naming its tail."""
    argv = shlex.split(command)
    env = {**os.environ, "PYTHONPATH": str(folder) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, str(folder / "bench" / argv[0]), *argv[1:]], cwd=folder, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    if done.returncode != 0 or not lines:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise SystemExit(f"compare: `{command}` failed in {folder} (exit {done.returncode}):\n{tail}")
    return {k: float(v) for k, v in FIGURE.findall(lines[-1])}, wall


def table(name: str, command: str, runs: dict[str, list[dict[str, float]]], labels: list[str]) -> list[str]:
    keys = [k for k in runs[labels[0]][0] if all(k in r for lab in labels for r in runs[lab])]
    out = [f"== {name}: {command}", f"{'figure':<24} {labels[0]:>14} {labels[1]:>14} {'head/base':>10}"]
    for k in keys:
        base, head = (statistics.median(r[k] for r in runs[lab]) for lab in labels)
        ratio = f"{head / base:.3f}" if base else "-"
        out.append(f"{k:<24} {base:>14.4g} {head:>14.4g} {ratio:>10}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD~1", help="the commit to compare against (default HEAD~1)")
    ap.add_argument("--head", default=None, help="a commit (default: the working tree)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each benchmark per side (default 3)")
    ap.add_argument("--only", default=",".join(DEFAULT), help="benchmarks of the default set, comma-separated")
    ap.add_argument("--bench", action="append", default=[], help="a benchmark command instead of the set (repeatable)")
    args = ap.parse_args()
    chosen = {f"b{i}": c for i, c in enumerate(args.bench)} or {
        n: DEFAULT[n] for n in args.only.split(",") if n in DEFAULT}
    unknown = [n for n in args.only.split(",") if n not in DEFAULT]
    if unknown and not args.bench:
        raise SystemExit(f"compare: unknown benchmark(s) {', '.join(unknown)}; the set is {', '.join(DEFAULT)}")
    sides = [tree_of(args.base), tree_of(args.head)]
    labels = [f"base {sides[0][0]}", f"head {sides[1][0]}"]
    for name, command in chosen.items():
        runs: dict[str, list[dict[str, float]]] = {lab: [] for lab in labels}
        for r in range(args.rounds):
            order = list(zip(labels, sides, strict=True))
            for lab, (_, folder) in order if r % 2 == 0 else order[::-1]:
                figures, wall = run_once(folder, command)
                runs[lab].append(figures)
                print(f"{name} round {r + 1} {lab}: {wall:.1f} s wall, load {os.getloadavg()[0]:.1f}", flush=True)
        print("\n".join(table(name, command, runs, labels)), flush=True)
    print(f"compare base={sides[0][0]} head={sides[1][0]} rounds={args.rounds} benchmarks={len(chosen)}")


if __name__ == "__main__":
    main()
