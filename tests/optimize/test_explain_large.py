"""`etl explain` of a pipeline with thousands of rules (generated at test time): a summary per field."""

from __future__ import annotations

import random
import re

from typer.testing import CliRunner

from etl.cli import app
from etl.optimize import compile_rules
from etl.optimize.explain import FULL_LIMIT, explain
from etl.spec.rules import Rule

N_REGEX, N_LOWER, N_GUARDED, N_NATIVE, N_PREFILTER, N_PYTHON = 1600, 150, 150, 60, 30, 10


def _token(rng: random.Random, k: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(k))


def _rule_lines(seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(N_REGEX):
        rx = rng.choice([rf"{_token(rng, 8)}\.(com|net)", rf"/tmp/\.{_token(rng, 6)}", _token(rng, 10),
                         rf"--{_token(rng, 5)}=[0-9]+"])
        out.append(f"- {{id: rx{i}, when: {{field: cmd, regex: '{rx}'}}}}")
    for i in range(N_LOWER):
        out.append(f"- {{id: low{i}, when: {{field: cmd, apply: [lower], contains: '{_token(rng, 9)}'}}}}")
    for i in range(N_GUARDED):
        out.append(f"- {{id: g{i}, when: {{all: [{{field: user, eq: u{i % 7}}}, "
                   f"{{field: cmd, regex: 'sudo +{_token(rng, 6)}'}}]}}}}")
    for i in range(N_NATIVE):
        out.append(f"- {{id: n{i}, when: {{any: [{{field: port, ge: {1000 + i}}}, {{field: ip, cidr: 10.{i}.0.0/16}}]}}}}")
    for i in range(N_PREFILTER):
        out.append(f"- {{id: lb{i}, when: {{field: cmd, regex: '(?<=x){_token(rng, 7)}'}}}}")
    for i in range(N_PYTHON):
        out.append(f"- {{id: py{i}, when: {{field: cmd, regex: '(?m)^ {{0,{i + 1}}}$'}}}}")
    return out


def _pipeline(tmp_path):
    (tmp_path / "rules.yaml").write_text("\n".join(_rule_lines()) + "\n")
    p = tmp_path / "big.yaml"
    p.write_text("""name: big
sources: [{id: src, type: file, path: in, format: jsonl, schema: {cmd: string, user: string, port: int, ip: string}}]
transforms: [{id: f, type: filter, input: src, rule_files: [rules.yaml]}]
sinks: [{id: out, type: file, input: f, path: out}]
""")
    (tmp_path / "in").mkdir()
    return p


def test_etl_explain_summarizes_a_large_rule_set(tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_CACHE_DIR", "off")
    res = CliRunner().invoke(app, ["explain", str(_pipeline(tmp_path))])
    assert res.exit_code == 0, res.output
    text = res.stdout
    total = N_REGEX + N_LOWER + N_GUARDED + N_NATIVE + N_PREFILTER + N_PYTHON
    assert f"rules: {total} (0 inline, 1 file)" in text
    assert f"filter program: {total} rules" in text and f"(summary: more than {FULL_LIMIT} rules)" in text
    assert len(text.splitlines()) < 200  # a summary, not one line per rule
    assert "fingerprint fields: cmd, ip, port, user" in text
    # per field: pattern count and serialized database size
    cmd = re.search(r"^ +cmd: (\d+) patterns, (\d+) bytes \((.*)\)$", text, re.M)
    low = re.search(r"^ +lower\(cmd\): (\d+) patterns, (\d+) bytes", text, re.M)
    assert cmd and low, text
    assert int(cmd.group(1)) == N_REGEX + N_GUARDED + N_PREFILTER and int(cmd.group(2)) > 10_000
    assert f"prefilter confirmed by re {N_PREFILTER}" in cmd.group(3)
    assert int(low.group(1)) == N_LOWER
    # native predicates: listed up to the limit, then counted per field
    natives = 7 + 2 * N_NATIVE
    assert f"native predicates (evaluated first): {natives}" in text
    assert "(coalesce(`user` = 'u0', false))" in text or "`user` = 'u0'" in text
    assert f"... and {natives - 50} more (per field: ip {N_NATIVE}, port {N_NATIVE}, user 7)" in text
    # fallbacks: every python re rule, with its reason and rule id
    assert f"fallbacks: {N_PYTHON} python re, {N_PREFILTER} prefilter" in text
    for i in range(N_PYTHON):
        assert re.search(rf"python re on cmd .*: can match an empty string at some positions only; rules py{i}$",
                         text, re.M), text
    assert "prefilter cmd #" in text and "lookbehind" in text


def test_small_programs_keep_every_line():
    rules = [Rule.model_validate({"id": f"r{i}", "when": {"field": "cmd", "contains": f"t{i}"}}) for i in range(3)]
    text = explain(compile_rules(rules), show_sizes=False)
    assert "summary" not in text and "  r2: p2" in text
    assert "summary" in explain(compile_rules(rules), show_sizes=False, full=False)
