#!/usr/bin/env python3
"""What hiding env() values costs `etl explain`: the benchmark pipelines of bench/validate.py, explained with the
redaction on and off, side by side in one process.

    .venv/bin/python bench/redaction.py [--files 100] [--repeat 5]

Generates bench/validate.py's files (filters with inline rules and rule files, windows, grok, joins, a few
invalid ones; their templates read KAFKA_BOOTSTRAP and MYSQL_PASSWORD with env()), registers those values and
three more (a token, a GitHub-style key, a phrase with spaces), then for each repetition runs the work of
`etl explain` over every file twice, once with the redaction off (the registered values set aside) and once on,
file by file, in alternating order: check_file(programs=True), the physical plan, explain's text (its long lines
filled through `redact` before wrapping), then the text (or the diagnostics of an invalid file) through `redact`
as the CLI prints it. Per file, the best of the repetitions of each mode counts (CPU seconds; wall time varies
with the machine's load). The texts one pass redacted are then redacted again alone (best of --repeat): the
CPU time of the redaction itself, a steadier figure on a busy machine than the difference of the two. Last line:
`redaction files=N off_cpu_s=X on_cpu_s=Y overhead_pct=Z inside_redact_s=S inside_pct=P`.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validate import generate  # noqa: E402  (bench/validate.py: the same pipelines)

ENVIRON = {"KAFKA_BOOTSTRAP": "kafka-7.internal.example:9092", "MYSQL_PASSWORD": "Zq9-hidden-pw-2026"}
MORE = ["Zm9vYmFy+c2VjcmV0/dG9rZW4=", "ghp_abc.def-1234567890", "correct horse battery staple"]


def explain_one(f: Path, out: io.StringIO) -> None:
    from etl.check import check_file
    from etl.commands import redact
    from etl.physical import physical_plan, planner_settings
    from etl.physical.explain import explain_text

    checked = check_file(f, environ=ENVIRON, programs=True)
    if checked.plan is None:
        for d in checked.report.sorted():
            out.write(redact(d.render()) + "\n")
        return
    out.write(redact(explain_text(checked.plan, physical_plan(checked.plan, planner_settings()))))


class Recorded:
    """The redaction (etl.secrets' matcher, which every output goes through), keeping the texts it gets."""

    def __init__(self, matcher: object):
        self.matcher, self.texts = matcher, []  # type: list[str]

    def sub(self, text: str) -> str:
        self.texts.append(text)
        return self.matcher.sub(text)  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    from etl import secrets

    with tempfile.TemporaryDirectory() as tmp:
        files = generate(Path(tmp), args.files)
        secrets.register([*ENVIRON.values(), *MORE])
        matcher = secrets._matcher
        outs = {"off": io.StringIO(), "on": io.StringIO()}
        for f in files:  # warm: imports, compiled programs, Hyperscan checks
            explain_one(f, io.StringIO())
        # per file, off and on one after the other (alternating which goes first), the best of --repeat each:
        # both modes see the same machine at nearly the same moment
        best = {m: [float("inf")] * len(files) for m in ("off", "on")}
        recorded = Recorded(matcher)
        for rep in range(args.repeat):
            for i, f in enumerate(files):
                for mode in (("off", "on") if (rep + i) % 2 == 0 else ("on", "off")):
                    secrets._matcher = recorded if mode == "on" else None  # off: redact finds nothing to hide
                    out = outs[mode] if rep == 0 else io.StringIO()
                    c = time.process_time()
                    explain_one(f, out)
                    best[mode][i] = min(best[mode][i], time.process_time() - c)
        secrets._matcher = matcher
        # the redaction alone: the texts of one pass (what every output of it went through), best of --repeat
        texts = recorded.texts[:len(recorded.texts) // args.repeat]
        inside = float("inf")
        for _ in range(args.repeat):
            c = time.process_time()
            for text in texts:
                secrets.redact(text)
            inside = min(inside, time.process_time() - c)
    off, on = sum(best["off"]), sum(best["on"])
    leaked = [v for v in [*ENVIRON.values(), *MORE] if v.lower() in outs["on"].getvalue().lower()]
    print(f"output chars off={len(outs['off'].getvalue())} on={len(outs['on'].getvalue())}, secrets left in the 'on' "
          f"output: {leaked or 'none'}; redact calls per pass {len(texts)} ({sum(map(len, texts))} chars)", file=sys.stderr)
    print(f"redaction files={len(files)} off_cpu_s={off:.3f} on_cpu_s={on:.3f} overhead_pct={100 * (on - off) / off:.2f} "
          f"inside_redact_s={inside:.4f} inside_pct={100 * inside / on:.2f}")


if __name__ == "__main__":
    main()
