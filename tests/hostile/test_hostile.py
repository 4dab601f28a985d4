"""The hostile-input corpus: every file of tests/fixtures/hostile/ through the real command line.

Format of tests/fixtures/hostile/expected.yaml (one entry per case file; add a file and
its entry to add a case):

    case_file.yaml: []                                  # valid: no error, no warning
    other.yaml: [[E002, 1, 8], [W204, 3, 5]]            # exactly these diagnostics (code, line, col)
    rules.yaml: [[E303, 3, 7, rules/r.yaml]]            # one in another file (a rule file): its path last
    third.yaml: {diagnostics: [], args: [--allow-path, ../outside]}   # with extra command-line arguments

Files a case cannot hold in git (FIFOs, symlink loops, a 40 MB file, 5,001 files, a folder
beside the corpus) are made by SETUPS in a copy of the corpus before the first case runs.

Each case runs as `etl validate`, `etl validate --format json` and `etl explain`, each its own
process (forked from one warm CLI process: tests/hostile/forkserver.py) under a 2 GB address-space
limit and a 60 s timeout, from the corpus folder
(so diagnostics name `case_file.yaml`). Asserted for each: the exact diagnostics (json),
the same lines in the text output, the exit codes (validate 0/1, explain 0/1), no E999,
no Python traceback, and no secret of SECRETS (in any letter case) in stdout or stderr.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.hostile.forkserver import CliServer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "hostile"
MEMORY_LIMIT = 2 * 1024 ** 3
TIMEOUT = 60

# the environment every case sees: the values no output may show
SECRETS = {
    "ETL_TEST_SECRET": "s3cr3t-Value",
    "ETL_TEST_ESC": 'pa"ss\\w\u00f6rd:#x',
    "ETL_TEST_URLPW": "p@ss/w:rd&z",
    "ETL_TEST_LONG": "L0ng-" + "x7Q" * 30,
    "ETL_TEST_ONE": "e",  # one character: hidden where it stands as a value, and never garbles the rest
}
# what must not appear (lower-cased output): the long secrets and their telling parts
FORBIDDEN = ["s3cr3t", "ss\\w\u00f6rd", 'pa\\"ss', "pa\"ss", "p@ss", "p%40ss", "l0ng-x7q", "x7qx7qx7q"]


def _fifo(base: Path) -> None:
    for p in (base / "rules" / "fifo.yaml", base / "fifodir" / "x.yaml"):
        p.parent.mkdir(exist_ok=True)
        if not p.exists():
            os.mkfifo(p)


def _links(base: Path) -> None:
    (base / "loop").mkdir(exist_ok=True)
    (base / "loop" / "sub").mkdir(exist_ok=True)
    shutil.copy(base / "rules" / "ok_a.yaml", base / "loop" / "sub" / "r.yaml")
    for link, target in ((base / "loop" / "sub" / "up", ".."), (base / "loop" / "self", "."),
                         (base / "rules" / "link_passwd.yaml", "/etc/passwd"),
                         (base / "rules" / "link_ok.yaml", "ok_a.yaml")):
        if not link.is_symlink():
            link.symlink_to(target)


def _files(base: Path) -> None:
    with open(base / "rules" / "huge.yaml", "wb") as fh:
        fh.truncate(40 * 1024 * 1024)  # sparse: larger than any file etl reads, costs no disk
    (base / "rules" / "binary.yaml").write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe\xfa\x00" * 64)
    many = base / "many" / "deep"
    many.mkdir(parents=True, exist_ok=True)
    for i in range(5001):
        (many / f"r{i}.yaml").touch()
    outside = base.parent / "outside"
    outside.mkdir(exist_ok=True)
    shutil.copy(base / "rules" / "ok_a.yaml", outside / "ok_rules.yaml")


SETUPS = {"fifo": _fifo, "links": _links, "files": _files}


def _cases() -> list[tuple[str, dict]]:
    table = YAML(typ="safe").load((CORPUS / "expected.yaml").read_text())
    out = []
    for name, entry in table.items():
        spec = entry if isinstance(entry, dict) else {"diagnostics": entry}
        out.append((name, {"diagnostics": [(d[0], d[1], d[2], d[3] if len(d) > 3 else name)
                                           for d in spec.get("diagnostics") or []],
                           "args": list(spec.get("args") or [])}))
    return out


CASES = _cases()


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hostile") / "pipelines"
    shutil.copytree(CORPUS, base, symlinks=True)
    for setup in SETUPS.values():
        setup(base)
    return base


@pytest.fixture(scope="session")
def cli() -> Iterator[CliServer]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETL_")}
    env.update(SECRETS, PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200")
    server = CliServer(env, ROOT, timeout=TIMEOUT, memory=MEMORY_LIMIT)
    yield server
    server.close()


def _no_leak(out: str) -> None:
    low = out.lower()
    for bad in FORBIDDEN:
        assert bad.lower() not in low, f"secret part {bad!r} in output:\n{out}"
    assert "E999" not in out and "Traceback" not in out, out


def test_every_case_file_has_an_entry() -> None:
    listed = {name for name, _ in CASES}
    files = {p.name for p in CORPUS.glob("*.yaml") if p.name != "expected.yaml"}
    assert files - listed == set() and listed - files == set()


def test_corpus_size() -> None:
    assert len(CASES) >= 90


@pytest.mark.parametrize("name,spec", CASES, ids=[c[0] for c in CASES])
def test_hostile_case(cli: CliServer, corpus: Path, name: str, spec: dict) -> None:
    want = sorted(spec["diagnostics"])
    args = spec["args"]
    as_json, text, explain = (cli.run(corpus, "validate", "--format", "json", *args, name),
                              cli.run(corpus, "validate", *args, name), cli.run(corpus, "explain", *args, name))
    _no_leak(as_json.stdout + as_json.stderr)
    files = json.loads(as_json.stdout)["files"]
    got = sorted((d["code"], d["line"], d["col"], d["file"]) for f in files for d in f["errors"] + f["warnings"])
    assert got == want, as_json.stdout
    has_errors = any(code.startswith("E") for code, *_ in want)
    assert as_json.returncode == (1 if has_errors else 0)

    _no_leak(text.stdout + text.stderr)
    assert text.returncode == as_json.returncode
    lines = sorted(ln.split(" ", 2)[:2] for ln in text.stdout.splitlines() if re.match(r"\S+:\d+:\d+: [EW]\d{3} ", ln))
    assert lines == sorted([f"{file}:{line}:{col}:", code] for code, line, col, file in want)

    _no_leak(explain.stdout + explain.stderr)
    assert explain.returncode == (1 if has_errors else 0), explain.stderr
    if has_errors:
        assert re.search(r"^\S+:\d+:\d+: E\d{3} ", explain.stderr, re.M), explain.stderr
    else:
        assert explain.stdout.startswith("pipeline "), explain.stdout
