"""`etl run` compiles what `etl validate` accepts: every valid file of both hostile corpora (at the limits:
a 365d window and watermark, a 0.5 s window, a 1PiB buffer, nested grok definitions just under the expansion
cap, every valid Jinja construct, secrets from the environment ...) becomes Spark queries without error."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from etl.check import check_file
from tests.hostile.test_hostile import SECRETS, SETUPS

pytestmark = [pytest.mark.spark, pytest.mark.servers]  # the Kafka cases compile against the test broker
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _valid() -> list[tuple[str, str]]:
    out = []
    for corpus in ("hostile", "hostile_validate"):
        table = YAML(typ="safe").load((FIXTURES / corpus / "expected.yaml").read_text())
        for name, entry in sorted(table.items()):
            diags = entry.get("diagnostics") if isinstance(entry, dict) else entry
            args = entry.get("args") if isinstance(entry, dict) else None
            if not args and not any(str(d if isinstance(d, str) else d[0]).startswith("E") for d in diags or []):
                out.append((corpus, name))
    return out


VALID = _valid()


def test_both_corpora_have_valid_cases():
    assert len(VALID) >= 30


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both corpora, copied once, with the files git cannot hold (symlinks, FIFOs ...) made as test_hostile does."""
    root = tmp_path_factory.mktemp("corpora")
    for corpus in ("hostile", "hostile_validate"):
        shutil.copytree(FIXTURES / corpus, root / corpus, symlinks=True)
        (root / corpus / "in").mkdir(exist_ok=True)  # the text sources of some cases
    for setup in SETUPS.values():
        setup(root / "hostile")
    return root


@pytest.mark.parametrize("corpus,name", VALID, ids=[f"{c}/{n}" for c, n in VALID])
def test_compiles(spark, request, corpora, tmp_path, corpus, name):
    from etl.compile import CompileContext, Compiler

    path = corpora / corpus / name
    text = path.read_text()
    if "type: kafka" in text:  # compiling a Kafka source checks that its broker answers: the test broker
        path = path.with_name(f"live_{name}")
        path.write_text(text.replace("127.0.0.1:9092", request.getfixturevalue("kafka_server").bootstrap_servers))
    checked = check_file(path, environ=dict(SECRETS), programs=True)
    assert checked.plan is not None, [d.render() for d in checked.report.errors]
    queries = Compiler(CompileContext(spark, checked.plan.graph, str(tmp_path / "ck"))).queries()
    assert queries and all(q.outputs for q in queries)
