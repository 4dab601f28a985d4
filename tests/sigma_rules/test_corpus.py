"""SigmaHQ process-creation rules: etl agrees with pySigma's own reading on generated events.

For every rule file of tests/fixtures/sigma_corpus (150 of SigmaHQ's process-creation rules), an event the rule
matches and a near miss (one field changed a little) are generated from pySigma's parsed detection and checked
with an independent evaluator over pySigma's objects (tests/sigma_rules/pysigma_oracle.py); etl's rule
(etl.load.sigma_map) must give the same verdicts, in the reference interpreter and in the optimized matcher
running all of them at once."""

from __future__ import annotations

import pyarrow as pa
from sigma.rule import SigmaRule

from etl.load.sigma_map import Mapper
from etl.load.sigma_parse import parse_file
from etl.matching.matcher import Matcher
from etl.optimize import compile_rules
from etl.optimize.reference import eval_node
from etl.spec.rules import Rule
from tests.sigma_rules import pysigma_oracle as oracle
from tests.sigma_rules.helpers import corpus


def _cases() -> tuple[list, list]:
    files = sorted((corpus() / "rules" / "windows" / "process_creation").glob("*.yml"))
    cases, skipped = [], []
    for f in files:
        (entry,) = parse_file(str(f))
        if entry.error is not None:
            skipped.append((f.name, entry.error))
            continue
        rule = SigmaRule.from_yaml(f.read_text())
        hit = oracle.matching_event(rule)
        miss = oracle.near_miss(rule, hit) if hit is not None else None
        if miss is None:
            skipped.append((f.name, "no event generated"))
            continue
        try:
            when = Mapper(lambda x: x, [], {}).when(entry.tree)
        except Exception as e:  # noqa: BLE001 - named in the assertion below
            skipped.append((f.name, str(e)))
            continue
        cases.append((f.stem, Rule.model_validate({"id": f.stem.replace(".", "_"), "when": when}), hit, miss))
    return cases, skipped


def test_etl_agrees_with_pysigma_on_corpus_rules():
    cases, skipped = _cases()
    assert len(cases) >= 100, f"only {len(cases)} rules with events; skipped: {skipped[:10]}"
    for name, rule, hit, miss in cases:
        assert eval_node(rule.when, hit), f"{name}: etl does not match {hit}"
        assert not eval_node(rule.when, miss), f"{name}: etl matches the near miss {miss}"
    rules = [c[1] for c in cases]
    events = [e for c in cases for e in (c[2], c[3])]
    names = sorted({k for e in events for k in e})  # from_pylist would take the first row's keys only
    batch = pa.RecordBatch.from_pylist([{k: (None if e.get(k) is None else str(e[k])) for k in names} for e in events],
                                       schema=pa.schema([(k, pa.string()) for k in names]))
    got = Matcher(compile_rules(rules), cache=False).match(batch).matched_ids()
    for k, (name, rule, _hit, _miss) in enumerate(cases):
        assert rule.id in got[2 * k], f"{name}: the matcher misses its event"
        assert rule.id not in got[2 * k + 1], f"{name}: the matcher matches its near miss"
