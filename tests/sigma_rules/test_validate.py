"""`etl validate` and `etl explain` of filters with Sigma rules: positioned warnings, counts, the corpus."""

from __future__ import annotations

from pathlib import Path

from etl.check import check_file
from etl.load.sigma import SigmaStats, load_sigma
from etl.diagnostics import Report, Span
from etl.plan import build_plan
from etl.plan.explain import explain_plan
from etl.spec.sigma import SigmaSpec
from tests.sigma_rules.helpers import corpus

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sigma"


def test_validate_names_unsupported_rules_and_absent_fields_at_their_place():
    c = check_file(FIXTURE / "pipeline.yaml")
    rules = FIXTURE / "rules"
    assert [d.render() for d in c.report.sorted()] == [
        f"{rules}/hashes.yml:9:9: W341 warning Sigma rule 'Known Bad Hash' (filter 'tagged') reads 'Hashes' that "
        "the events do not have: it never matches\n    hint: map the Sigma field onto an event column with "
        "`sigma.field_mapping` (or a `preset`), or select the rules of this log source only",
        f"{rules}/same_user.yml:11:9: W340 warning Sigma rule 'Same User As Parent' skipped: fieldref with "
        "startswith, endswith or contains (field 'User' with field 'ParentUser') is not supported: only equality\n"
        "    hint: the filter runs without it",
    ]
    assert sorted(r.rule.id for r in c.graph.rules["tagged"]) == ["encoded_powershell", "whoami"]


def test_explain_counts_loaded_skipped_and_unsupported_rules():
    c = check_file(FIXTURE / "pipeline.yaml")
    text = explain_plan(build_plan(c.graph, Report(), programs=True))
    assert ("    rules: 2\n    sigma: 3 rules loaded from 5 files, 1 skipped by selection, 1 unsupported, "
            "1 read absent fields (never match)\n    program:\n") in text
    assert "    mode alerts\n    rules: 2\n    sigma: 2 rules loaded from 2 files, 0 skipped by selection, " \
           "0 unsupported\n" in text
    assert ("matched_rules:array<struct<rule:string,id:string,title:string,level:string,tags:array<string>>>"
            in text)
    assert "rule:string, rule_id:string, rule_title:string, rule_level:string, rule_tags:array<string>" in text


def test_missing_sigma_path_is_an_error(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text((FIXTURE / "pipeline.yaml").read_text().replace("paths: [rules]", "paths: [nope]")
                 .replace("path: data/procs.jsonl", f"path: {FIXTURE}/data/procs.jsonl")
                 .replace("rules/whoami.yml", f"{FIXTURE}/rules/whoami.yml")
                 .replace("rules/encoded_powershell.yml", f"{FIXTURE}/rules/encoded_powershell.yml"))
    c = check_file(p, allow_paths=[FIXTURE])
    assert [d.render().splitlines()[0] for d in c.report.errors] == [f"{p}:14:15: E006 Sigma file 'nope' does not exist"]


def test_the_process_creation_corpus_loads_every_rule():
    folder = corpus() / "rules" / "windows" / "process_creation"
    spec = SigmaSpec(paths=[str(folder)], select={"product": "windows", "category": "process_creation"})
    report, stats = Report(), SigmaStats()
    rules = load_sigma(spec, lambda *k: Span("p.yaml"), str(corpus()), report, stats=stats)
    assert (stats.files, stats.loaded, stats.skipped, stats.unsupported) == (150, 150, 0, 0)
    assert len({r.rule.id for r in rules}) == 150
    assert report.diagnostics == []  # the cross-user spawn rule's fieldref included
    levels = {r.rule.severity for r in rules}
    assert levels == {"info", "low", "medium", "high", "critical"}
