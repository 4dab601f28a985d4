"""Run small inline pipelines through the real compile/runtime path (shared session)."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path
from typing import Any

from etl.check import check_file


def checked(tmp_path: Path, yaml_text: str, name: str = "p.yaml", allow_paths: tuple = ()) -> Any:
    f = tmp_path / name
    f.write_text(textwrap.dedent(yaml_text))
    c = check_file(f, programs=True, allow_paths=allow_paths)
    assert c.plan is not None, "\n".join(d.render() for d in c.report.sorted())
    return c


def run_events(spark: Any, tmp_path: Path, yaml_text: str, inputs: dict[str, list[dict]],
               allow_paths: tuple = ()) -> dict[str, list[dict]]:
    """Feed `inputs` to the pipeline's sources; return every captured output (sinks and dead_letter).
    `allow_paths`: folders besides tmp_path the pipeline may read (--allow-path)."""
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    c = checked(tmp_path, yaml_text, allow_paths=allow_paths)
    res = run_case(c.plan, TestCase(name="inline", inputs=inputs), spark)
    assert res.ok, res.message
    return res.captured


def check_random_rule_sets(spark: Any, cases: list, plan: Any, decide_cases: Any, event: Any = None) -> None:
    """The Hypothesis tests of the JVM rule paths: of the generated (rule trees, events) cases, those whose rules
    validate, compile and that `plan` takes to the JVM are decided there in one Spark job (`decide_cases`, with and
    without tags); each event's matched ids and its kept verdict must equal the reference interpreter's.
    `event` turns a generated event into the record the reference reads (default: it is one)."""
    from etl.optimize import compile_rules
    from etl.optimize.reference import matched_rules
    from etl.spec.rules import Rule

    runnable = []
    for whens, events in cases:
        try:
            rules = [Rule.model_validate({"id": f"r{i}", "when": w}) for i, w in enumerate(whens)]
            program = compile_rules(rules)
        except ValueError:
            continue
        if plan(program).body is not None:
            runnable.append((rules, program, events))
    if not runnable:
        return
    verdicts = decide_cases(spark, [(program, events) for _, program, events in runnable], (True, False))
    for (rules, _, events), (tagged, kept) in zip(runnable, verdicts, strict=True):
        want = [matched_rules(rules, event(e) if event else e) for e in events]
        assert [list(x) for x in tagged] == want, [r.when for r in rules]
        assert kept == [bool(w) for w in want], [r.when for r in rules]


def random_timestamp(rng: random.Random) -> str:
    """An ISO-8601 instant (date and time apart by T or a space), or one a character or a field away from it."""
    t = (f"{rng.choice([1, 1969, 1970, 2000, 2024, 2026, 9999]):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d}"
         f"{rng.choice('TT ')}{rng.randint(0, 24):02d}:{rng.randint(0, 60):02d}:{rng.randint(0, 60):02d}")
    if rng.random() < 0.5:
        t += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 8)))
    t += rng.choice(["Z", "Z", f"+{rng.randint(0, 19):02d}:{rng.randint(0, 60):02d}",
                     f"-{rng.randint(0, 19):02d}:{rng.randint(0, 60):02d}", "", "z", " Z", "+0530"])
    if rng.random() < 0.1:
        i = rng.randrange(len(t))
        t = t[:i] + rng.choice("0 -T:.Z9") + t[i + 1:]
    return t
