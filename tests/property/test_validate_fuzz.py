"""Property: whatever the input, validation only ever returns diagnostics.

Random YAML-ish text and random mutations of valid pipelines (delete/rename keys,
change types, swap values, break indentation, insert Jinja) go through the same
`check_file` that `etl validate` uses. It must never raise, never report an
internal error (E999), and every diagnostic must carry a sane position.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.check import check_file
from etl.diagnostics import Report
from etl.load import load_file
from trees import dump
from trees import get as _get
from trees import paths as _paths
from trees import put as _set

ROOT = Path(__file__).resolve().parents[2]
WORK = Path(tempfile.mkdtemp(prefix="etl-fuzz-"))
SEEDS: list[tuple[str, Path]] = []  # (pipeline text, folder to write mutations into: its rule files are there)
for folder in (ROOT / "pipelines", ROOT / "tests/fixtures/valid"):
    work = WORK / folder.name
    shutil.copytree(folder / "rules", work / "rules")
    SEEDS += [(p.read_text(), work) for p in sorted(folder.glob("*.yaml"))]
TEXTS = [t for t, _ in SEEDS]
CODE = re.compile(r"^[EW]\d{3}$")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def _data(text: str, folder: Path):
    path = folder / "seed.yaml"
    path.write_text(text)
    doc = load_file(path, Report(), environ={})
    return doc.data, folder


DATAS = [_data(t, f) for t, f in SEEDS]
_counter = iter(range(10**9))


def validate(text: str, folder: Path = WORK):
    path = folder / f"case{next(_counter) % 50}.yaml"
    path.write_text(text)
    checked = check_file(path, environ={})
    for d in checked.report.diagnostics:
        assert d.code != "E999", d.render()
        assert CODE.match(d.code), d.code
        assert d.span.line >= 1 and d.span.col >= 1, d.render()
        assert d.message
    if checked.plan is not None:
        assert not checked.report.errors
        from etl.plan.explain import explain_plan

        assert explain_plan(checked.plan).startswith("pipeline ")
    return checked


# ---------------------------------------------------------------------- random text

YAML_CHARS = st.sampled_from(list("abcdefgxyz_-:,.[]{}|>!&*#%@`'\"\\ \t\n0123456789") + ["{{", "}}", "{%", "%}",
                                                                                          "- ", ": ", "\n  ", "\n    "])


@SETTINGS
@given(st.lists(YAML_CHARS, max_size=200).map("".join))
def test_random_yaml_text(text):
    validate(text)


@SETTINGS
@given(st.text(max_size=300))
def test_random_unicode_text(text):
    validate(text)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["kafka", "filter", "print", "10s", "64MB", "file",
                                                           "window", "grok", "%{IP:ip}", "a > 1", "x.y"]))
KEYS = st.sampled_from(["name", "sources", "transforms", "sinks", "id", "type", "input", "inputs", "expr", "rules",
                        "when", "field", "regex", "schema", "event_time", "size", "kind", "aggregates", "path",
                        "dead_letter", "checkpoint", "trigger", "vars", "all", "any", "not", "on", "table"])
trees = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(KEYS, c, max_size=5)),
                     max_leaves=30)


@SETTINGS
@given(st.dictionaries(KEYS, trees, max_size=8))
def test_random_structures(data):
    validate(dump(data))


# ---------------------------------------------------------------------- mutations of valid pipelines

@st.composite
def mutated_data(draw):
    import copy

    seed, folder = draw(st.sampled_from(DATAS))
    data = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _get(data, path[:-1])
        op = draw(st.sampled_from(["delete", "rename", "retype", "swap", "duplicate"]))
        if op == "delete":
            del parent[path[-1]]
        elif op == "rename" and isinstance(parent, dict):
            new = draw(st.one_of(KEYS, st.text(min_size=1, max_size=8), st.just(str(path[-1])[:-1] or "x")))
            parent[new] = parent.pop(path[-1])
        elif op == "retype":
            _set(data, path, draw(trees))
        elif op == "swap":
            other = draw(st.sampled_from(paths))
            try:
                a, b = _get(data, path), _get(data, other)
                _set(data, path, b)
                _set(data, other, a)
            except (KeyError, IndexError, TypeError):
                pass
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(_get(data, path))
    return data, folder


@SETTINGS
@given(mutated_data())
def test_mutated_pipelines(case):
    data, folder = case
    validate(dump(data), folder)


JINJA = st.sampled_from(["{{ x }}", "{{ vars.nope }}", "{{ env(\"NOPE\") }}", "{{ env('A', 'b') }}", "{% if x %}",
                         "{% endif %}", "{# c #}", "{{", "}}", "{%", "{{ 1/0 }}", "{{ vars }}", "{{ ''.__class__ }}",
                         "{% for i in range(3) %}-{{ i }}{% endfor %}", "{{ name | upper }}", "{{ [1, 2] }}"])


@st.composite
def mutated_text(draw):
    text, folder = draw(st.sampled_from(SEEDS))
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        op = draw(st.sampled_from(["indent", "dedent", "jinja", "delete", "dup", "tab", "truncate", "colon"]))
        line = lines[i] if lines else ""
        if op == "indent":
            lines[i] = " " * draw(st.integers(1, 5)) + line
        elif op == "dedent":
            lines[i] = line.lstrip()[: len(line)]
        elif op == "jinja":
            pos = draw(st.integers(0, len(line)))
            lines[i] = line[:pos] + draw(JINJA) + line[pos:]
        elif op == "delete" and lines:
            del lines[i]
        elif op == "dup":
            lines.insert(i, line)
        elif op == "tab":
            lines[i] = "\t" + line
        elif op == "truncate":
            lines[i] = line[: draw(st.integers(0, len(line)))]
        elif op == "colon":
            lines[i] = line.replace(":", "", 1) if ":" in line else line + ":"
    return "\n".join(lines) + "\n", folder


@SETTINGS
@given(mutated_text())
def test_mutated_pipeline_text(case):
    text, folder = case
    validate(text, folder)


def test_seeds_are_valid():
    for text, folder in SEEDS:
        checked = validate(text, folder)
        assert checked.ok, [d.render() for d in checked.report.errors]
