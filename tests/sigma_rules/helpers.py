"""Sigma rules as etl rules, checked with the reference interpreter and the optimized matcher."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa

from etl.load.sigma_map import Mapper
from etl.load.sigma_parse import parse_text
from etl.matching.matcher import Matcher
from etl.optimize import compile_rules
from etl.optimize.reference import eval_node
from etl.spec.rules import Rule

REPO = Path(__file__).resolve().parents[2]


def corpus() -> Path:
    """The SigmaHQ rules the tests read: 150 process-creation rules in tests/fixtures/sigma_corpus (its README
    says which; Detection Rule License 1.1)."""
    return REPO / "tests" / "fixtures" / "sigma_corpus"


def sigma_rule(detection: str, *, keyword_fields: tuple = (), vars_: dict | None = None,
               field_mapping: dict | None = None) -> Rule:
    """An etl rule from a Sigma `detection:` block (YAML text, indented or not)."""
    text = ("title: t\nlogsource: {product: windows}\ndetection:\n"
            + textwrap.indent(textwrap.dedent(detection).strip("\n"), "    ") + "\n")
    (entry,) = parse_text(text)
    assert entry.error is None, entry.error
    mapping = field_mapping or {}
    when = Mapper(lambda f: mapping.get(f, f), list(keyword_fields), vars_ or {}).when(entry.tree)
    return Rule.model_validate({"id": "r", "when": when})


def matches(rule: Rule, event: dict[str, Any]) -> bool:
    """The reference interpreter's verdict, checked against the optimized matcher's."""
    want = eval_node(rule.when, event)
    got = Matcher(compile_rules([rule]), cache=False).match(pa.RecordBatch.from_pylist([event])).matched_ids()
    assert got == [["r"] if want else []], f"matcher {got} but reference {want} on {event}"
    return want
