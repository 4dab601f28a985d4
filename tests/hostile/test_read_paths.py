"""One guard for every file a pipeline names (etl.load.paths): the same hostile paths, given to each surface
that reads files (rule_files, sigma paths, function modules, lookup tables), are refused alike, each at the
entry that names it (exact code, line and column), without hanging on a pipe or reading a huge file.

A function module is named by a dotted name, not a path: its `..` is a package folder that is a symlink to
`..`, its absolute path a module that is a symlink to an absolute path."""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Callable

import pytest

from etl import settings
from etl.check import check_file
from etl.load import paths

MB = 1024 * 1024

# (pipeline text with ENTRY where the surface names its path, line and column of ENTRY's quote, suffix of its
# files, the content of a valid file, how a file named `stem` is written as ENTRY, size cap of the surface)
SURFACES: dict[str, tuple[str, int, int, str, str, Callable[[str], str], int]] = {
    "rule_files": ("name: t\n"
                   "sources: [{id: src, type: file, path: in, format: jsonl, schema: {a: string}}]\n"
                   "transforms:\n"
                   "  - id: f\n"
                   "    type: filter\n"
                   "    input: src\n"
                   "    rule_files: ['ENTRY']\n"
                   "sinks: [{id: out, type: file, input: f, path: out}]\n",
                   7, 18, ".yaml", "- id: r\n  when: {field: a, eq: x}\n", lambda p: p, 32 * MB),
    "sigma": ("name: t\n"
              "sources: [{id: src, type: file, path: in, format: jsonl, schema: {a: string}}]\n"
              "transforms:\n"
              "  - id: f\n"
              "    type: filter\n"
              "    input: src\n"
              "    sigma: {paths: ['ENTRY']}\n"
              "sinks: [{id: out, type: file, input: f, path: out}]\n",
              7, 21, ".yml", "title: T\nlogsource: {product: windows}\ndetection:\n  sel: {a: x}\n  condition: sel\n",
              lambda p: p, 32 * MB),
    "functions": ("name: t\n"
                  "functions: [{name: fn, callable: 'ENTRY', returns: string, args: [string]}]\n"
                  "sources: [{id: src, type: file, path: in, format: jsonl, schema: {a: string}}]\n"
                  "transforms: [{id: d, type: derive, input: src, columns: {b: 'fn(a)'}}]\n"
                  "sinks: [{id: out, type: file, input: d, path: out}]\n",
                  2, 34, ".py", "def fn(s: str) -> str:\n    return s\n",
                  lambda p: p.removesuffix(".py").replace("/", ".") + ":fn", 32 * MB),
    "lookup": ("name: t\n"
               "sources:\n"
               "  - {id: src, type: file, path: in, format: jsonl, schema: {a: string}}\n"
               "  - {id: tab, type: file, static: true, format: csv, schema: {a: string, b: string}, path: 'ENTRY'}\n"
               "transforms: [{id: l, type: lookup, input: src, table: tab, on: {a: a}}]\n"
               "sinks: [{id: out, type: file, input: l, path: out}]\n",
               4, 92, ".csv", "a,b\nx,y\n", lambda p: p, 4096 * MB),
}


@pytest.fixture(autouse=True)
def _own_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "_ALLOWED", [])  # --allow-path is process-wide: keep it to each test
    for name in ("ETL_MAX_FILE_MB", "ETL_MAX_TABLE_MB"):
        monkeypatch.delenv(name, raising=False)
    settings.reset()


def _tree(tmp_path: Path, surface: str) -> tuple[Path, Path]:
    suffix, content = SURFACES[surface][3], SURFACES[surface][4]
    base, outside = tmp_path / "p", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (base / "in").mkdir()
    (outside / f"x{suffix}").write_text(content)
    return base, outside


def _case(case: str, base: Path, outside: Path, surface: str) -> str:
    """Make the hostile file of `case` and return the path (or module name) that names it."""
    suffix, as_entry, cap = SURFACES[surface][3], SURFACES[surface][5], SURFACES[surface][6]
    if case == "fifo":
        os.mkfifo(base / f"fifo{suffix}")
        return as_entry(f"fifo{suffix}")
    if case == "symlink_loop":
        (base / f"loop{suffix}").symlink_to(f"loop{suffix}")
        return as_entry(f"loop{suffix}")
    if case == "absolute":
        if surface == "functions":
            (base / "abs.py").symlink_to(outside / "x.py")
            return as_entry("abs.py")
        return str(outside / f"x{suffix}")
    if case == "dotdot":
        if surface == "functions":
            (base / "up").symlink_to("..")
            return as_entry("up/outside/x.py")
        return f"../outside/x{suffix}"
    if case == "symlink_out":
        (base / f"link{suffix}").symlink_to(outside / f"x{suffix}")
        return as_entry(f"link{suffix}")
    if case == "proc_environ":
        if surface == "functions":
            (base / "env.py").symlink_to("/proc/self/environ")
            return as_entry("env.py")
        return "/proc/self/environ"
    assert case == "oversized"
    with open(base / f"big{suffix}", "wb") as fh:
        fh.truncate(cap + 1)  # sparse: costs no disk, and no memory unless it is read
    return as_entry(f"big{suffix}")


CASES = {  # case -> (code, start of the message after "<what> '<entry>' ")
    "fifo": ("E005", "is not a regular file"),
    "symlink_loop": ("E006", "cannot be read (Too many levels of symbolic links)"),
    "absolute": ("E005", "is outside the pipeline's folder"),
    "dotdot": ("E005", "is outside the pipeline's folder"),
    "symlink_out": ("E005", "is outside the pipeline's folder"),
    "proc_environ": ("E005", "is a system file"),
    "oversized": ("E005", "is too large"),
}
WHAT = {"rule_files": "rule file", "sigma": "Sigma file", "functions": "function module", "lookup": "lookup file"}


@pytest.mark.timeout(20)  # a pipe opened for reading would wait for a writer forever
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("surface", list(SURFACES))
def test_a_hostile_path_is_refused_alike_at_its_entry(tmp_path: Path, surface: str, case: str) -> None:
    text, line, col = SURFACES[surface][:3]
    base, outside = _tree(tmp_path, surface)
    entry = _case(case, base, outside, surface)
    (base / "p.yaml").write_text(text.replace("ENTRY", entry))
    c = check_file(base / "p.yaml")
    code, says = CASES[case]
    got = [(d.code, d.span.file, d.span.line, d.span.col) for d in c.report.errors]
    assert got == [(code, str(base / "p.yaml"), line, col)], c.report.errors
    named = entry.split(":")[0].replace(".", "/") + ".py" if surface == "functions" else entry
    assert c.report.errors[0].message.startswith(f"{WHAT[surface]} '{named}' {says}"), c.report.errors[0].message


@pytest.mark.parametrize("surface", list(SURFACES))
def test_allow_path_lets_a_pipeline_read_a_folder_outside_its_tree(tmp_path: Path, surface: str) -> None:
    text = SURFACES[surface][0]
    base, outside = _tree(tmp_path, surface)
    entry = _case("dotdot", base, outside, surface)
    (base / "p.yaml").write_text(text.replace("ENTRY", entry))
    refused = check_file(base / "p.yaml")
    assert [d.code for d in refused.report.errors] == ["E005"]
    allowed = check_file(base / "p.yaml", allow_paths=[outside])
    assert allowed.report.errors == [] and allowed.plan is not None


@pytest.mark.timeout(20)
@pytest.mark.parametrize("surface", ["rule_files", "sigma", "lookup"])
def test_a_glob_ends_in_a_symlink_loop_and_refuses_a_pipe_it_matches(tmp_path: Path, surface: str) -> None:
    """The surfaces that take globs walk them alike: a loop (sub/up -> ..) is visited once, the one real file
    found; a pipe the glob matches is refused at the entry, never opened."""
    text, line, col, suffix, content = SURFACES[surface][:5]
    base, _ = _tree(tmp_path, surface)
    (base / "loop" / "sub").mkdir(parents=True)
    (base / "loop" / "sub" / "up").symlink_to("..")
    (base / "loop" / "sub" / f"r{suffix}").write_text(content)
    assert paths.resolve(f"loop/**/*{suffix}", base, paths.SIGMA_FILES if surface == "sigma" else paths.RULE_FILES
                         if surface == "rule_files" else paths.LOOKUP_TABLES) == [str(base / "loop/sub" / f"r{suffix}")]
    (base / "p.yaml").write_text(text.replace("ENTRY", f"loop/**/*{suffix}"))
    assert check_file(base / "p.yaml").report.errors == []
    os.mkfifo(base / "loop" / f"pipe{suffix}")
    c = check_file(base / "p.yaml")
    assert [(d.code, d.span.line, d.span.col) for d in c.report.errors] == [("E005", line, col)]
    assert "is not a regular file" in c.report.errors[0].message


def test_the_size_caps_are_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, _ = _tree(tmp_path, "rule_files")
    (base / "r.yaml").write_text("- id: r\n  when: {field: a, eq: x}\n" + "#" * 2000 + "\n")
    (base / "p.yaml").write_text(SURFACES["rule_files"][0].replace("ENTRY", "r.yaml"))
    assert check_file(base / "p.yaml").report.errors == []
    monkeypatch.setenv("ETL_MAX_FILE_MB", "0.001")  # 1,048 bytes
    settings.reset()
    c = check_file(base / "p.yaml")
    assert [(d.code, d.span.line, d.span.col, d.message, d.hint) for d in c.report.errors] == [
        ("E005", 7, 18, "rule file 'r.yaml' is too large (2035 bytes; at most 1048)",
         "ETL_MAX_FILE_MB sets the cap (0.001 MB)")]
    settings.reset()


def test_a_walk_deeper_than_the_cap_is_an_error_at_its_entry(tmp_path: Path) -> None:
    text, line, col = SURFACES["sigma"][:3]
    base, _ = _tree(tmp_path, "sigma")
    deep = base / "rules" / Path(*["d"] * paths.MAX_GLOB_DEPTH)
    deep.mkdir(parents=True)
    (base / "p.yaml").write_text(text.replace("ENTRY", "rules"))
    c = check_file(base / "p.yaml")
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.errors] == [
        ("E006", line, col, f"Sigma file path 'rules' goes deeper than {paths.MAX_GLOB_DEPTH} folders")]
