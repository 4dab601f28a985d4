"""The table of diagnostic codes (docs/reference/errors.md, `etl docs`) is complete and each code is exercised by a test.

"Exercised" is precise: a test module (Python, parsed) holds the code as a string on its own (`"E402"`, a
`('E102', 6, 70)` expectation) or as the code of a rendered diagnostic (`"p.yaml:3:5: E405 ..."`), inside an
`assert`, a `pytest.raises(match=...)`, a `parametrize` table or a module-level expectation table. A comment
(`# noqa: E402`) or prose does not count."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from etl.diagnostics import CODES

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"^[EW]\d{3}$")
RENDERED = re.compile(r":\d+:\d+: ([EW]\d{3}) ")


def readme_codes() -> dict[str, str]:
    text = (ROOT / "docs" / "reference" / "errors.md").read_text()
    table = text[text.index("| code | meaning |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        m = re.match(r"^\| ([EW]\d{3}) \| (.+) \|$", line)
        if m is None:
            break
        rows[m.group(1)] = m.group(2)
    return rows


def _codes_in(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            if CODE.match(n.value):
                out.add(n.value)
            out.update(RENDERED.findall(n.value))
    return out


def asserted_codes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            found |= _codes_in(node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:  # pytest.raises(..., match="... E405 ...")
                found |= _codes_in(item.context_expr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:  # @pytest.mark.parametrize tables
                found |= _codes_in(dec)
    for stmt in tree.body:  # module-level expectation tables (EXPECTED = {...})
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            found |= _codes_in(stmt)
    return found


def test_readme_table_lists_exactly_the_codes_etl_knows():
    rows = readme_codes()
    assert len(rows) >= 40
    assert sorted(rows) == sorted(CODES)


def test_every_readme_code_is_asserted_by_some_test():
    here = Path(__file__).resolve()
    found: set[str] = set()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.resolve() != here:
            found |= asserted_codes(path)
    assert sorted(set(readme_codes()) - found) == []


def test_the_scan_ignores_comments_and_prose(tmp_path):
    p = tmp_path / "test_x.py"
    p.write_text('import os  # noqa: E402\n"""E401 in a docstring"""\nX = 1\n'
                 'def test_a():\n    s = "E403"\n    assert run() == ("E404", 1)\n'
                 'EXPECTED = {"a": [("E102", 1, 2)]}\n'
                 'def test_b():\n    assert out == "p.yaml:3:5: E405 bad"\n')
    assert asserted_codes(p) == {"E404", "E102", "E405"}
