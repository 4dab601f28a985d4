"""One contract for every transform (tests/contract/transforms.py lists them, one adapter each, the plugin's
`first_seen` among them): its pipeline validates; the traits its spec declares are what explain shows (STATEFUL:
it heads a streaming query; dead_letters(...): explain lists it among the dead-letter writers; engine_aspects(): an
engine per aspect); its output columns are known before a run and are the expected rows' columns; a misspelt field
is one E100 at the field's line; the reference page documents it. Fast lane (no JVM), but
test_every_transform_runs_its_rows_and_dead_letters: every adapter's pipeline side by side in one `etl run --once`.

The plugin's adapter registers only with tests/fixtures/plugin on the path: test_the_plugin_passes_the_contract
runs this file's fast checks again in a subprocess that has it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from etl import registry
from etl.check import check_file
from etl.commands.reference import component_page, read_pipelines
from etl.physical import physical_plan, planner_settings
from etl.physical.explain import explain_text
from etl.spec.base import TransformBase
from tests.contract.transforms import PLUGIN, ROOT, TRANSFORM_ADAPTERS, TransformAdapter, pipeline_text

IDS = sorted(TRANSFORM_ADAPTERS)


def _checked(a: TransformAdapter, tmp: Path, misspell: str = "") -> tuple:
    text, where = pipeline_text([a], tmp / "data", name=f"contract-{a.id.replace('_', '-')}", misspell=misspell)
    (tmp / "p.yaml").write_text(text)
    a.write_files(tmp / "data")
    return check_file(tmp / "p.yaml", programs=True), where


def _explained(a: TransformAdapter, tmp: Path) -> tuple:
    c, _ = _checked(a, tmp)
    assert c.ok, "\n".join(d.render() for d in c.report.sorted())
    phys = physical_plan(c.plan, planner_settings())
    return c, phys, explain_text(c.plan, phys)


def test_every_transform_type_has_an_adapter():
    types = set(registry.entries("transform"))
    assert types <= {a.type for a in TRANSFORM_ADAPTERS.values()}, sorted(types - {a.type for a in
                                                                                   TRANSFORM_ADAPTERS.values()})


@pytest.mark.parametrize("name", IDS)
def test_validates_with_known_output_columns(name, tmp_path):
    a = TRANSFORM_ADAPTERS[name]
    c, _ = _checked(a, tmp_path)
    assert c.ok and not c.report.warnings, "\n".join(d.render() for d in c.report.sorted())
    assert [n for n, _ in c.graph.columns[a.id + (f".{a.output}" if a.output else "")]] == list(a.expected[0])


@pytest.mark.parametrize("name", IDS)
def test_declared_traits_are_what_explain_shows(name, tmp_path):
    a = TRANSFORM_ADAPTERS[name]
    c, phys, text = _explained(a, tmp_path)
    spec = c.graph.node(a.id).spec
    assert isinstance(spec, TransformBase)
    queries = text.split("\nqueries:\n", 1)[1].split("\n\n", 1)[0]
    # STATEFUL: the node heads a streaming query of its own, for its state (a stateless one heads one only when it
    # has several inputs, and says so)
    shown = text.split("\nengines:\n", 1)[1]
    assert spec.is_stateful() is a.stateful
    heads = f"  query {a.id}: streaming from {a.id}\n" in queries
    assert heads is (a.stateful or len(spec.inputs) > 1)
    assert (phys.root_of(a.id) == a.id) is heads
    if not spec.engine_aspects() or spec.RUN_WITH_ENGINES:  # else its own engines describe it
        assert (f"\n  {a.id}: spark-stream - in the streaming plan ({spec.STATE_WHY})\n" in "\n" + shown) is a.stateful
    # dead_letters(...): explain names it among the dead-letter writers
    engines = {ch.aspect: ch.engine for ch in phys.node(a.id).choices}
    writers = [ln for ln in queries.splitlines() if ln.startswith("    writes dead_letter <- ")]
    listed = any(f"{a.id} (dead letters)" in ln.split("<- ", 1)[1].split(", ") for ln in writers)
    assert listed is bool(a.dead)
    assert spec.dead_letters(engines, False) is bool(a.dead)
    # engine_aspects(): an engine per aspect, shown by explain
    for aspect in spec.engine_aspects():
        assert aspect in engines
        assert f"\n  {a.id} {aspect}: {engines[aspect]} - " in "\n" + shown


@pytest.mark.parametrize("name", IDS)
def test_a_misspelt_field_is_one_positioned_error(name, tmp_path):
    a = TRANSFORM_ADAPTERS[name]
    c, where = _checked(a, tmp_path, misspell=a.misspelt)
    wrong = a.misspelt + a.misspelt[-1]
    at = f"{tmp_path / 'p.yaml'}:{where[f'{a.id}.{a.misspelt}']}:5"
    got = [d.render().split("\n") for d in c.report.sorted() if d.is_error]
    right = "inputs" if a.misspelt == "input" else a.misspelt  # `input` is the shorthand of `inputs`
    unknown = [f"{at}: E100 unknown key '{wrong}' in transform '{a.id}'", f"    hint: did you mean '{right}'?"]
    # a required field misspelt is also missing (E101 at the component's first line)
    spec = registry.lookup("transform", a.type).spec
    if spec.model_fields[right].is_required():
        missing = f"{tmp_path / 'p.yaml'}:{where[f'{a.id}.id']}:5: E101 missing required key '{a.misspelt}' in transform"
        assert got[0][0].startswith(missing), got
        got = got[1:]
    assert got == [unknown]


@pytest.fixture(scope="module")
def reference() -> str:
    return component_page("transform", read_pipelines())


@pytest.mark.parametrize("name", [n for n in IDS if TRANSFORM_ADAPTERS[n].module is None])
def test_the_reference_documents_it(name, reference):
    """`etl docs`' page of transforms (docs/reference/transforms.md) has a section for it (built-ins only: a
    plugin's page is its own)."""
    assert f"\n## {TRANSFORM_ADAPTERS[name].type}\n" in reference


def _rows(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*.jsonl")) for x in f.read_text().splitlines()]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(PLUGIN)])}


def test_the_plugin_passes_the_contract():
    """The plugin's adapter through the fast checks, in a process that has the plugin (`-k first_seen` selects
    its cases only, so this test does not run itself again)."""
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not spark",
                          f"{Path(__file__).relative_to(ROOT)}", "-k", "first_seen"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, env={**_env(), "ETL_NO_SPARK": "on"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert res.stdout.splitlines()[-1].startswith("3 passed, "), res.stdout[-500:]  # validates, traits, misspelt


@pytest.mark.spark
@pytest.mark.timeout(300)
def test_every_transform_runs_its_rows_and_dead_letters(tmp_path):
    """Every adapter (the plugin's too) in one pipeline file, one `etl run --once`: each sink's exact rows, each
    transform's dead letters (stage and reason)."""
    adapters = [TRANSFORM_ADAPTERS[n] for n in IDS]
    env = _env()
    if "first_seen" not in TRANSFORM_ADAPTERS:  # this process lacks the plugin: the run has it
        res = subprocess.run([sys.executable, "-c", "from tests.contract.transforms import TRANSFORM_ADAPTERS as T; "
                              "print(sorted(T))"], cwd=ROOT, capture_output=True, text=True, env=env, check=True)
        plugin = [n for n in json.loads(res.stdout.replace("'", '"')) if n not in TRANSFORM_ADAPTERS]
        assert plugin == ["first_seen"]
        from tests.contract.transforms import FirstSeen

        adapters.append(FirstSeen())
    data = tmp_path / "data"
    text, where = pipeline_text(adapters, data)
    for a in adapters:
        a.write_inputs(data)
    (tmp_path / "p.yaml").write_text(text)
    # 2 shuffle partitions as in the shared session (etl run's default is 4): half the state stores per batch
    res = subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml", "--once", "-q",
                          "--conf", "spark.sql.shuffle.partitions=2"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=280, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    dead = _rows(data / "dead_letters")
    problems = []
    for a in adapters:
        got = sorted(json.dumps(r, sort_keys=True) for r in _rows(data / a.ref("out")))
        want = sorted(json.dumps(r, sort_keys=True) for r in a.expected)
        if got != want:
            problems.append(f"{a.id}: rows {got} != {want}")
        got_dead = sorted(((d["reason"], d["payload"]) for d in dead if d["stage"] == a.id), key=lambda x: x[1])
        want_dead = sorted(a.dead, key=lambda x: x[1])
        if len(got_dead) != len(want_dead) or not all(
                sub in r and p == payload and (f is None or r.startswith(f"p.yaml:{where[f'{a.id}.{f}']}:"))
                for (r, p), (sub, payload, f) in zip(got_dead, want_dead, strict=True)):
            problems.append(f"{a.id}: dead letters {got_dead} != {a.dead}")
    assert not problems, "\n".join(problems)
