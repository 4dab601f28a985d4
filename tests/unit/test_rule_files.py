"""Rule files: globs relative to the pipeline, list or {rules: [...]}, vars, positions in the rule file."""
import os

from etl.diagnostics import Report
from etl.load.rules import load_filter_rules, rule_file_paths, walk_predicates

from .helpers import check, codes, write

PIPE = """
name: r
vars:
  admin: root
sources:
  - {id: gen, type: generator, fields: {cmd: {choice: [ls]}, user: {choice: [root]}}}
transforms:
  - id: f
    type: filter
    input: gen
    rules:
      - {id: inline, when: {field: cmd, eq: ls}}
    rule_files: [RULES]
sinks:
  - {id: out, type: print, input: f}
"""


def _pipe(rules: str) -> str:
    return PIPE.replace("RULES", rules)


def test_glob_list_and_mapping_forms_with_vars(tmp_path):
    write(tmp_path, "rules/a.yaml", """
        rules:
          - id: a1
            when: {field: user, eq: "{{ vars.admin }}"}
        """)
    write(tmp_path, "rules/b.yaml", """
        - id: b1
          when: {all: [{field: cmd, regex: 'rm\\s+-rf'}, {not: {field: user, in: [ci]}}]}
        """)
    write(tmp_path, "rules/skip.txt", "not yaml rules")
    c = check(tmp_path, _pipe('"rules/*.yaml"'))
    assert c.ok, codes(c)
    rules = c.graph.rules["f"]
    assert [r.rule.id for r in rules] == ["inline", "a1", "b1"]
    assert rules[1].rule.when.eq == "root"
    assert rules[1].file.endswith(os.path.join("rules", "a.yaml"))
    assert (rules[1].span.line, rules[1].span_of("when", "eq").line) == (2, 3)
    assert rules[2].path == (0,)
    preds = list(walk_predicates(rules[2].rule.when, ("when",)))
    assert [p for _, p in preds] == [("when", "all", 0), ("when", "all", 1, "not")]
    assert str(rules[2].span_of("when", "all", 0, "regex")).endswith("b.yaml:2:36")


def test_same_file_matched_twice_is_loaded_once(tmp_path):
    write(tmp_path, "rules/a.yaml", "- {id: a1, when: {field: cmd, eq: x}}\n")
    c = check(tmp_path, _pipe('["rules/a.yaml", "rules/*.yaml", "./rules/a.yaml"]'.strip("[]")).replace(
        "rule_files: [", "rule_files: ["))
    assert c.ok, codes(c)
    assert [r.rule.id for r in c.graph.rules["f"]] == ["inline", "a1"]


def test_rule_file_errors_point_into_the_rule_file(tmp_path):
    write(tmp_path, "rules/bad.yaml", """
        rules:
          - id: ok
            when: {field: cmd, eq: x}
          - id: bad
            when: {field: cmd, regex: '(unclosed'}
          - id: typo
            when: {fild: cmd, eq: x}
        """)
    c = check(tmp_path, _pipe("rules/bad.yaml"))
    got = [(d.code, os.path.basename(d.span.file), d.span.line, d.span.col) for d in c.report.sorted()]
    assert got == [("E101", "bad.yaml", 7, 11), ("E100", "bad.yaml", 7, 12)]  # the file is rejected before regexes
    write(tmp_path, "rules/bad.yaml", "rules:\n  - id: bad\n    when: {field: cmd, regex: '(unclosed'}\n")
    c = check(tmp_path, _pipe("rules/bad.yaml"))
    got = [(d.code, os.path.basename(d.span.file), d.span.line, d.span.col) for d in c.report.sorted()]
    assert got == [("E300", "bad.yaml", 3, 32)]


def test_rule_file_not_a_list(tmp_path):
    write(tmp_path, "rules/x.yaml", "just a string\n")
    c = check(tmp_path, _pipe("rules/x.yaml"))
    assert [(d.code, d.span.line) for d in c.report.errors] == [("E102", 1)]


def test_rule_file_yaml_error_and_duplicate_keys(tmp_path):
    write(tmp_path, "rules/x.yaml", "rules:\n  - id: a\n    id: b\n    when: {field: cmd, eq: x}\n")
    c = check(tmp_path, _pipe("rules/x.yaml"))
    assert [(d.code, d.span.line, d.span.col) for d in c.report.errors] == [("E001", 3, 5)]


def test_reload_api_and_paths(tmp_path):
    write(tmp_path, "rules/a.yaml", "- {id: a1, when: {field: cmd, eq: x}}\n")
    c = check(tmp_path, _pipe("rules/*.yaml"))
    spec = c.pipeline.transforms[0]
    assert rule_file_paths(spec, tmp_path) == [os.path.realpath(tmp_path / "rules" / "a.yaml")]
    write(tmp_path, "rules/b.yaml", "- {id: b1, when: {field: cmd, eq: y}}\n")
    r = Report()
    again = load_filter_rules(spec, ("transforms", 0), c.document.smap, tmp_path, r, vars_=c.document.vars)
    assert [x.rule.id for x in again] == ["inline", "a1", "b1"]
    assert not r.diagnostics


def test_duplicate_rule_ids_across_files(tmp_path):
    write(tmp_path, "rules/a.yaml", "- {id: inline, when: {field: cmd, eq: x}}\n")
    c = check(tmp_path, _pipe("rules/a.yaml"))
    assert [(d.code, d.span.line, d.span.col) for d in c.report.errors] == [("E303", 1, 8)]
    assert "p.yaml:11" in c.report.errors[0].message


def test_rule_file_validated_on_its_own(tmp_path):
    from etl.check import check_file

    good = write(tmp_path, "good.yaml", "- {id: a, when: {field: cmd, regex: 'a+'}}\n")
    c = check_file(good, environ={})
    assert c.ok and c.plan is None and c.rules_only
    bad = write(tmp_path, "bad.yaml", "rules:\n  - {id: a, when: {field: cmd, regex: 'a('}}\n  - {id: a, when: {field: x, eq: 1}}\n")
    c = check_file(bad, environ={})
    assert [(d.code, d.span.line) for d in c.report.errors] == [("E300", 2), ("E303", 3)]
    assert not c.ok
