"""Golden fixtures: tests/fixtures/optimize/<pass>.yaml holds cases of input rules and the expected explain text.

Set ETL_UPDATE_GOLDEN=1 (tests/goldens.py) to rewrite the expected texts from the current output (then review the diff).
"""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from etl.optimize import compile_rules
from etl.optimize.explain import explain
from etl.spec.rules import Rule
from tests.goldens import update_goldens

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "optimize"


def _yaml() -> YAML:
    y = YAML()
    y.width = 4096
    y.preserve_quotes = True
    return y


def load_cases(name: str) -> list[dict]:
    return list(_yaml().load((FIXTURES / f"{name}.yaml").read_text(encoding="utf-8"))["cases"])


def rules_of(raw: list) -> list[Rule]:
    return [Rule.model_validate(r) for r in raw]


def render(case: dict, upto: str) -> str:
    return explain(compile_rules(rules_of(case["rules"]), upto=upto), show_sizes=False)


def check(name: str, case: dict, actual: str) -> None:
    if update_goldens():
        path = FIXTURES / f"{name}.yaml"
        doc = _yaml().load(path.read_text(encoding="utf-8"))
        for c in doc["cases"]:
            if c["name"] == case["name"]:
                c["explain"] = LiteralScalarString(actual)
        with path.open("w", encoding="utf-8") as f:
            _yaml().dump(doc, f)
        return
    expected = case["explain"]
    assert actual == expected
