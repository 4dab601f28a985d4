"""Which files a pipeline may read through `rule_files`, and how a glob is walked.

Paths resolve inside the pipeline file's folder tree, or a folder allowed with
--allow-path (`allow_paths`, process-wide so that the reloads of a running pipeline
see it); only regular files outside /proc, /sys and /dev. A glob walks from its fixed
leading folders (which must be allowed), visits each folder once (symlink loops end),
follows symlinks only inside the allowed folders, and stops past MAX_GLOB_ENTRIES.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Iterable

__all__ = ["MAX_GLOB_ENTRIES", "RulePathError", "allow_paths", "resolve_rule_paths"]

GLOB_CHARS = set("*?[")
MAX_GLOB_ENTRIES = 5000  # folders and files one `rule_files` glob may visit
_SYSTEM_TREES = ("/proc", "/sys", "/dev")
_ALLOWED: list[str] = []  # folders allowed besides the pipeline's own (--allow-path), for this process


def allow_paths(paths: Iterable[str | os.PathLike]) -> None:
    """Let `rule_files` read under these folders too (etl's --allow-path; process-wide, so that
    the reloads of a running pipeline see them)."""
    for p in paths:
        real = os.path.realpath(p)
        if real not in _ALLOWED:
            _ALLOWED.append(real)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class RulePathError(ValueError):
    """A `rule_files` entry that names something a pipeline may not read: (code, message, hint)."""

    def __init__(self, code: str, message: str, hint: str):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


_HINT_OUTSIDE = "rule files are read inside the pipeline file's folder; allow another one with --allow-path DIR"


def _check_readable(path: str, pattern: str, roots: list[str]) -> str:
    """The real path of a rule file, or RulePathError when the pipeline may not read it."""
    real = os.path.realpath(path)
    if any(_inside(real, t) for t in _SYSTEM_TREES):
        raise RulePathError("E005", f"rule file {pattern!r} is a system file", _HINT_OUTSIDE)
    if not any(_inside(real, r) for r in roots):
        raise RulePathError("E005", f"rule file {pattern!r} is outside the pipeline's folder", _HINT_OUTSIDE)
    try:
        st = os.stat(real)
    except OSError as e:
        raise RulePathError("E006", f"rule file {pattern!r} does not exist"
                            + ("" if e.errno == 2 else f" ({e.strerror})"), "paths are relative to the pipeline file's folder")
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a pipe, device or socket)"
        raise RulePathError("E005", f"rule file {pattern!r} is {what}", "name YAML files holding rules")
    return real


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A `/`-separated glob (`**` any folders, `*` and `?` within a name, `[...]` a class) as a regex."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:j].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _glob(pattern: str, base_dir: str, roots: list[str]) -> list[str]:
    """Files a glob names: walked from its fixed leading folders, which must be allowed; symlinked
    folders followed only inside the allowed folders and each folder visited once (no loop); at most
    MAX_GLOB_ENTRIES entries visited."""
    parts = Path(pattern).parts
    fixed = next(i for i, part in enumerate(parts) if GLOB_CHARS & set(part))
    start = Path(base_dir, *parts[:fixed]) if not Path(pattern).is_absolute() else Path(*parts[:fixed])
    start_real = os.path.realpath(start)
    if not any(_inside(start_real, r) for r in roots) or any(_inside(start_real, t) for t in _SYSTEM_TREES):
        raise RulePathError("E005", f"rule file glob {pattern!r} reaches outside the pipeline's folder", _HINT_OUTSIDE)
    rest = "/".join(parts[fixed:])
    regex = _glob_regex(rest)
    depth = None if "**" in rest else len(parts) - fixed
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    visited = 0

    def walk(folder: str, rel: str, level: int) -> None:
        nonlocal visited
        try:
            st = os.stat(folder)
        except OSError:
            return
        if (st.st_dev, st.st_ino) in seen:
            return  # a symlink loop, or the same folder by two ways
        seen.add((st.st_dev, st.st_ino))
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue  # as glob: hidden files only when named
            visited += 1
            if visited > MAX_GLOB_ENTRIES:
                raise RulePathError("E006", f"rule file glob {pattern!r} visits more than {MAX_GLOB_ENTRIES} "
                                    "files and folders", "name the rule files' folder more precisely")
            name = rel + entry.name
            real = os.path.realpath(entry.path) if entry.is_symlink() else None
            if real is not None and not any(_inside(real, r) for r in roots):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if depth is None or level + 1 < depth:
                    walk(entry.path, name + "/", level + 1)
            elif regex.match(name):  # a pipe or device matched is reported (E005), not skipped
                found.append(entry.path)

    if os.path.isdir(start_real):
        walk(str(start), "", 0)
    return sorted(found)


def resolve_rule_paths(pattern: str, base_dir: str | os.PathLike) -> list[str]:
    """Files named by one `rule_files` entry (sorted), all inside the pipeline's folder tree or an
    --allow-path folder, all regular files; RulePathError otherwise."""
    roots = [os.path.realpath(base_dir), *_ALLOWED]
    if "\0" in pattern:
        raise RulePathError("E006", "a rule file path holds a NUL character", "give a file path")
    p = Path(pattern)
    if GLOB_CHARS & set(pattern):
        files = _glob(pattern, str(base_dir), roots)
        return [f for f in files if _check_readable(f, pattern, roots)]
    full = str(p if p.is_absolute() else Path(base_dir) / p)
    _check_readable(full, pattern, roots)
    return [full]
