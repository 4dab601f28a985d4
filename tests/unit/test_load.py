"""Loading: jinja templating (sandboxed), env(), redaction, positioned YAML, duplicate keys."""
from etl.diagnostics import Report
from etl.load import load_text
from etl.load.yamlmap import parse_yaml

from .helpers import check, codes, write

PIPE = """
name: t
vars:
  topic: logs
  n: 3
sources:
  - id: k
    type: kafka
    bootstrap_servers: '{{ env("BOOT", "127.0.0.1:9092") }}'
    topics: ["{{ vars.topic }}", "{{ topic }}-{{ n * 2 }}"]
    format: text
sinks:
  - {id: out, type: print, input: k}
"""


def test_vars_env_default_and_values(tmp_path):
    c = check(tmp_path, PIPE)
    assert c.ok, codes(c)
    src = c.pipeline.sources[0]
    assert src.bootstrap_servers == "127.0.0.1:9092"
    assert src.topics == ["logs", "logs-6"]
    assert c.document.secrets == set()


def test_env_value_is_used_and_redacted(tmp_path):
    c = check(tmp_path, PIPE, environ={"BOOT": "kafka.internal:9093"})
    assert c.pipeline.sources[0].bootstrap_servers == "kafka.internal:9093"
    assert c.document.secrets == {"kafka.internal:9093"}
    from etl.plan.explain import explain_plan

    assert "kafka.internal" not in c.document.redact("servers kafka.internal:9093")
    assert c.document.redact("x kafka.internal:9093 y") == "x *** y"
    assert "kafka.internal" not in c.document.redact(explain_plan(c.plan))


def test_cli_vars_override_vars(tmp_path):
    from etl.check import check_file

    path = write(tmp_path, "p.yaml", PIPE)
    c = check_file(path, environ={}, cli_vars={"topic": "other"})
    assert c.pipeline.sources[0].topics == ["other", "other-6"]


def test_undefined_variable_reported_at_its_line(tmp_path):
    c = check(tmp_path, """
        name: t
        sources:
          - id: k
            type: kafka
            bootstrap_servers: x:1
            topics: ["{{ vars.nope }}", "{{ missing }}"]
        sinks:
          - {id: out, type: print, input: k}
        """)
    assert codes(c) == [("E003", 6, 23), ("E003", 6, 37)]


def test_env_without_default_unset(tmp_path):
    c = check(tmp_path, """
        name: t
        sources:
          - {id: k, type: kafka, bootstrap_servers: '{{ env("NOPE_NOT_SET") }}', topics: [a]}
        sinks:
          - {id: out, type: print, input: k}
        """)
    assert codes(c) == [("E004", 3, 54)]


def test_sandbox_blocks_attribute_escape(tmp_path):
    c = check(tmp_path, """
        name: t
        sources:
          - {id: g, type: generator, fields: {a: {const: "{{ ''.__class__.__mro__[1].__subclasses__() }}"}}}
        sinks:
          - {id: out, type: print, input: g}
        """)
    assert [x[0] for x in codes(c)] == ["E002"]  # the sandbox refuses it (a template error, not an undefined name)
    assert "unsafe" in c.report.errors[0].message or "access" in c.report.errors[0].message


def test_template_runtime_errors_are_diagnostics(tmp_path):
    c = check(tmp_path, """
        name: t
        vars: {n: 0}
        sources:
          - {id: g, type: generator, fields: {a: {const: "{{ 1 / n }}"}}}
        sinks:
          - {id: out, type: print, input: g}
        """)
    assert [x[:2] for x in codes(c)] == [("E002", 4)]


def test_template_loops_and_comments(tmp_path):
    c = check(tmp_path, """
        {# a comment #}
        name: t
        sources:
        {% for i in range(3) %}
          - {id: g{{ i }}, type: generator, fields: {a: {sequence: {{ i }}}}}
        {% endfor %}
        transforms:
          - {id: u, type: union, inputs: [g0, g1, g2]}
        sinks:
          - {id: out, type: print, input: u}
        """)
    assert c.ok, codes(c)
    assert [s.id for s in c.pipeline.sources] == ["g0", "g1", "g2"]


def test_duplicate_keys_all_reported_with_positions():
    r = Report()
    parse_yaml("a: 1\nb:\n  c: 1\n  c: 2\n  c: 3\na: 2\n", "f.yaml", r)
    assert [(d.code, d.span.line, d.span.col) for d in r.sorted()] == [
        ("E001", 4, 3), ("E001", 5, 3), ("E001", 6, 1)]


def test_yaml_syntax_error_position():
    r = Report()
    assert parse_yaml("a: [1, 2\nb: 3\n", "f.yaml", r) is None
    d = r.errors[0]
    assert (d.code, d.span.line) == ("E001", 2)


def test_multiple_documents_rejected():
    r = Report()
    assert parse_yaml("a: 1\n---\nb: 2\n", "f.yaml", r) is None
    assert [(d.code, d.span.line) for d in r.errors] == [("E001", 2)]  # at the separator


def test_merge_keys_and_anchors():
    r = Report()
    data, smap = parse_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n", "f.yaml", r)
    assert data["c"] == {"x": 1, "y": 3}
    assert not r.diagnostics


def test_deep_nesting_is_a_diagnostic():
    r = Report()
    text = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    parse_yaml(text, "f.yaml", r)
    assert r.errors and r.errors[0].code == "E001"


def test_scalars_typed():
    r = Report()
    data, _ = parse_yaml("a: 0x10\nb: 1_000\nc: .inf\nd: yes\ne: ~\nf: 1.5\ng: '010'\n", "f.yaml", r)
    assert data == {"a": 16, "b": 1000, "c": float("inf"), "d": "yes", "e": None, "f": 1.5, "g": "010"}


def test_unreadable_and_binary_files(tmp_path):
    from etl.check import check_file

    missing = check_file(tmp_path / "nope.yaml")
    assert [d.code for d in missing.report.errors] == ["E005"]
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00name: x")
    assert [d.code for d in check_file(binary).report.errors] == ["E005"]
    empty = tmp_path / "e.yaml"
    empty.write_text("")
    assert [d.code for d in check_file(empty).report.errors] == ["E102"]


def test_inner_positions_of_scalars():
    r = Report()
    data, smap = parse_yaml('a: x > 1\nb: "y > 2"\nc: |\n  z > 3\n', "f.yaml", r)
    assert str(smap.inner(("a",), data["a"], 4)) == "f.yaml:1:8"
    assert str(smap.inner(("b",), data["b"], 4)) == "f.yaml:2:9"
    assert str(smap.inner(("c",), data["c"], 2)) == "f.yaml:3:4"  # block scalar: its own position


def test_load_text_inherit_vars_skips_own_vars():
    r = Report()
    doc = load_text("rules: ['{{ vars.x }}']\n", "r.yaml", r, environ={}, inherit_vars={"x": "v"})
    assert doc.data == {"rules": ["v"]}


def test_undefined_variable_position_with_statements(tmp_path):
    c = check(tmp_path, """
        {% set unused = 1 %}
        name: t
        sources:
          - {id: g, type: generator, fields: {a: {const: "{{ vars.nope }}"}}}
        sinks:
          - {id: out, type: print, input: g}
        """)
    line = '  - {id: g, type: generator, fields: {a: {const: "{{ vars.nope }}"}}}'
    assert codes(c) == [("E003", 4, line.index("nope") + 1)]


def test_alias_bomb_is_a_diagnostic():
    import time

    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    r = Report()
    t = time.process_time()
    assert parse_yaml("\n".join(lines) + "\n", "f.yaml", r) is None
    assert time.process_time() - t < 2
    assert [(d.code, d.message) for d in r.errors] == [("E001", "YAML aliases expand to too many values")]


def test_template_output_is_bounded(tmp_path):
    c = check(tmp_path, """
        name: t
        {% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{% endfor %}{% endfor %}
        """)
    assert [(d.code, "exceeds" in d.message) for d in c.report.errors] == [("E002", True)]


def test_vars_may_use_vars_and_cli_overrides(tmp_path):
    from etl.check import check_file

    path = write(tmp_path, "p.yaml", """
        name: t
        vars:
          base: logs
          topic: "{{ vars.base }}-v1"
        sources:
          - {id: k, type: kafka, bootstrap_servers: "h:1", topics: ["{{ vars.topic }}"]}
        sinks:
          - {id: out, type: print, input: k}
        """)
    assert check_file(path, environ={}).pipeline.sources[0].topics == ["logs-v1"]
    assert check_file(path, environ={}, cli_vars={"base": "audit"}).pipeline.sources[0].topics == ["audit-v1"]
