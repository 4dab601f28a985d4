"""Which files a pipeline may read, and how they are read: the one guard of every file a pipeline names.

Every reader of a file a pipeline names goes through `resolve` (a path or glob -> checked files) and
`read_text` (a checked file -> its text) or `read_head` (its first bytes): `rule_files`, `sigma.paths`, the
modules of `functions:`, lookup tables (static file sources), the sample of a schemaless file source's files
(etl.load.infer: heads only, so not capped) and the pipeline and rule files themselves. Each kind of file is a
`Reader` (what it is called in messages, which size cap it has, whether a folder names the files under it).

Paths resolve inside the pipeline file's folder tree, or a folder allowed with --allow-path
(`allow_paths`, process-wide so that the reloads of a running pipeline see it); only regular files
outside /proc, /sys and /dev, no larger than the reader's cap (ETL_MAX_FILE_MB, lookup tables
ETL_MAX_TABLE_MB), checked before a byte is read; a file is opened without blocking (a pipe swapped
in after the check is refused, not waited on). A glob or folder walks from its fixed leading folders
(which must be allowed), visits each folder once (symlink loops end), follows symlinks only inside the
allowed folders, descends at most MAX_GLOB_DEPTH folders and stops past MAX_GLOB_ENTRIES entries.
A refusal is a PathError (code, message, hint) that its caller reports at the entry that named the path.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Iterable

from etl import settings
from etl.spec.signature import SignatureError

__all__ = ["LOOKUP_TABLES", "MAX_GLOB_DEPTH", "MAX_GLOB_ENTRIES", "MODULES", "PIPELINES", "PathError", "PathMissing",
           "RULE_FILES", "SAMPLES", "Reader", "RulePathError", "SIGMA_FILES", "allow_paths", "check_file", "module_reader",
           "read_head", "read_text", "resolve", "resolve_rule_paths"]

GLOB_CHARS = frozenset("*?[")
MAX_GLOB_ENTRIES = 5000  # folders and files one glob or folder may visit
MAX_GLOB_DEPTH = 32  # folders below its start a glob or folder walk descends
_SYSTEM_TREES = ("/proc", "/sys", "/dev")
_ALLOWED: list[str] = []  # folders allowed besides the pipeline's own (--allow-path), for this process
_MB = 1024 * 1024
_RELATIVE = "paths are relative to the pipeline file's folder"


@dataclass(frozen=True)
class Reader:
    """A kind of file a pipeline names: `what` it is called, the settings field of its size cap in MB,
    `suffixes` a folder names the files of (None: a folder is refused; (): every file under it, read as one
    table whose files count together against the cap)."""

    what: str
    cap: str = "max_file_mb"
    suffixes: tuple[str, ...] | None = None
    head: bool = False  # only a file's head is read (read_head): a larger file is not refused

    @property
    def hint(self) -> str:
        """The hint of a path outside the allowed folders."""
        return f"{self.what}s are read inside the pipeline file's folder; allow another folder with --allow-path DIR"

    def max_mb(self) -> float:
        return float(getattr(settings.current(), self.cap))

    def max_bytes(self) -> int:
        return int(self.max_mb() * _MB)

    def cap_hint(self) -> str:
        return f"ETL_{self.cap.upper()} sets the cap ({self.max_mb():g} MB)"


RULE_FILES = Reader("rule file")
SIGMA_FILES = Reader("Sigma file", suffixes=(".yml", ".yaml"))
MODULES = Reader("function module")
LOOKUP_TABLES = Reader("lookup file", cap="max_table_mb", suffixes=())
PIPELINES = Reader("file")  # a pipeline or rule file given to etl, read by load_file
SAMPLES = Reader("data file", suffixes=("",), head=True)  # a schemaless file source's sample (etl.load.infer)


def allow_paths(paths: Iterable[str | os.PathLike]) -> None:
    """Let a pipeline read under these folders too (etl's --allow-path; process-wide, so that the reloads of a
    running pipeline see them)."""
    for p in paths:
        real = os.path.realpath(p)
        if real not in _ALLOWED:
            _ALLOWED.append(real)


def roots(base_dir: str | os.PathLike) -> list[str]:
    """The folders a pipeline in `base_dir` may read under."""
    return [os.path.realpath(base_dir), *_ALLOWED]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _system(real: str) -> bool:
    return any(_inside(real, t) for t in _SYSTEM_TREES)


class PathError(ValueError):
    """A path a pipeline may not read, or that names nothing: (code, message, hint)."""

    def __init__(self, code: str, message: str, hint: str):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


RulePathError = PathError  # its name when it guarded rule_files only


class PathMissing(PathError):
    """A path that names nothing (E006): a lookup table may appear before `etl run`, a rule file may not."""


def _kind(mode: int) -> str:
    return "a folder" if stat.S_ISDIR(mode) else "not a regular file (a pipe, device or socket)"


def _too_large(reader: Reader, label: str, size: int) -> PathError:
    return PathError("E005", f"{reader.what} {label!r} is too large ({size} bytes; at most {reader.max_bytes()})",
                     reader.cap_hint())


def _stat(real: str, label: str, reader: Reader, roots_: list[str]) -> os.stat_result:
    """The stat of an allowed path (symlinks resolved in `real`), or PathError."""
    if _system(real):
        raise PathError("E005", f"{reader.what} {label!r} is a system file", reader.hint)
    if not any(_inside(real, r) for r in roots_):
        raise PathError("E005", f"{reader.what} {label!r} is outside the pipeline's folder", reader.hint)
    try:
        return os.stat(real)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise PathMissing("E006", f"{reader.what} {label!r} does not exist", _RELATIVE) from None
        raise PathError("E006", f"{reader.what} {label!r} cannot be read ({e.strerror})", _RELATIVE) from None


def check_file(path: str, label: str, roots_: list[str], reader: Reader) -> os.stat_result:
    """The stat of a file the pipeline may read: allowed, regular, within the cap; PathError otherwise."""
    st = _stat(os.path.realpath(path), label, reader, roots_)
    if not stat.S_ISREG(st.st_mode):
        raise PathError("E005", f"{reader.what} {label!r} is {_kind(st.st_mode)}", f"name a {reader.what}")
    if st.st_size > reader.max_bytes() and not reader.head:
        raise _too_large(reader, label, st.st_size)
    return st


def read_text(path: str, reader: Reader, label: str | None = None) -> str:
    """The UTF-8 text of a regular file of at most the reader's cap, opened without blocking (a pipe or device
    is refused, never waited on; a file that grows after the check is cut at the cap, not read forever);
    PathError (E005) otherwise. Where it may be is the caller's check (`resolve`)."""
    label = path if label is None else label
    cap = reader.max_bytes()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise PathError("E005", f"cannot read {reader.what} {label!r}: {e.strerror or e}", "check the file") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathError("E005", f"{reader.what} {label!r} is {_kind(st.st_mode)}", f"name a {reader.what}")
        if st.st_size > cap:
            raise _too_large(reader, label, st.st_size)
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise _too_large(reader, label, len(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PathError("E005", f"{reader.what} {label!r} is not UTF-8 text: {e.reason}", "check the file") from None


def read_head(path: str, reader: Reader, limit: int) -> tuple[bytes, bool]:
    """The first `limit` bytes of a regular file, opened without blocking (a pipe or device is refused, never
    waited on), and whether that is the whole file; PathError (E005) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise PathError("E005", f"cannot read {reader.what} {path!r}: {e.strerror or e}", "check the file") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PathError("E005", f"{reader.what} {path!r} is {_kind(os.fstat(fd).st_mode)}",
                            f"name a {reader.what}")
        data = fh.read(limit + 1)
    return data[:limit], len(data) <= limit


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


def _walk(start: str, label: str, roots_: list[str], reader: Reader, match: Callable[[str, bool], str],
          depth: int | None) -> list[str]:
    """Files under folder `start` that `match(relative name, is a folder)` keeps ('file'; 'all': a folder whose
    every file with the reader's suffixes is kept; '': skipped): each folder visited once (a symlink loop ends),
    symlinks followed only inside the allowed folders, at most `depth` levels (and MAX_GLOB_DEPTH), at most
    MAX_GLOB_ENTRIES entries visited. A pipe or device kept is returned (and refused by check_file), never skipped."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    visited = 0
    limit = MAX_GLOB_DEPTH if depth is None else min(depth, MAX_GLOB_DEPTH)

    def walk(folder: str, rel: str, level: int, everything: bool) -> None:
        nonlocal visited
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                return  # a symlink loop, or the same folder by two ways
            seen.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue  # as glob: hidden files only when named
            visited += 1
            if visited > MAX_GLOB_ENTRIES:
                raise PathError("E006", f"{reader.what} path {label!r} visits more than {MAX_GLOB_ENTRIES} files "
                                "and folders", f"name the {reader.what}s' folder more precisely")
            name = rel + entry.name
            if entry.is_symlink() and not any(_inside(os.path.realpath(entry.path), r) for r in roots_):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            keep = "all" if everything else match(name, is_dir)
            if is_dir:
                if keep == "all" or level + 1 < limit:
                    if level + 1 >= MAX_GLOB_DEPTH:
                        raise PathError("E006", f"{reader.what} path {label!r} goes deeper than {MAX_GLOB_DEPTH} "
                                        "folders", f"name the {reader.what}s' folder more precisely")
                    walk(entry.path, name + "/", level + 1, keep == "all")
            elif keep == "file" or (keep == "all" and entry.name.endswith(reader.suffixes or ("",))):
                found.append(entry.path)

    walk(start, "", 0, False)
    return found


def _glob(pattern: str, base_dir: str, roots_: list[str], reader: Reader) -> list[str]:
    """Files a glob names, walked from its fixed leading folders, which must be allowed."""
    parts = Path(pattern).parts
    fixed = next(i for i, part in enumerate(parts) if GLOB_CHARS & set(part))
    start = Path(base_dir, *parts[:fixed]) if not Path(pattern).is_absolute() else Path(*parts[:fixed])
    start_real = os.path.realpath(start)
    if not any(_inside(start_real, r) for r in roots_) or _system(start_real):
        raise PathError("E005", f"{reader.what} glob {pattern!r} reaches outside the pipeline's folder", reader.hint)
    rest = "/".join(parts[fixed:])
    regex = _glob_regex(rest)
    depth = None if "**" in rest else len(parts) - fixed
    folders = reader.suffixes is not None

    def match(name: str, is_dir: bool) -> str:
        if not regex.match(name):
            return ""
        return "all" if is_dir and folders else "" if is_dir else "file"

    return _walk(str(start), pattern, roots_, reader, match, depth) if os.path.isdir(start_real) else []


def resolve(pattern: str, base_dir: str | os.PathLike, reader: Reader) -> list[str]:
    """Files named by one path entry (sorted; a glob or folder may name several), each inside the pipeline's
    folder tree or an --allow-path folder, regular and within the reader's cap (a table's files together);
    PathError otherwise. A glob that matches nothing is [] (its caller says so)."""
    roots_ = roots(base_dir)
    if "\0" in pattern:
        raise PathError("E006", f"a {reader.what} path holds a NUL character", "give a file path")
    p = Path(pattern)
    expanded = bool(GLOB_CHARS & set(pattern))  # a glob or a folder: each file is named by its own path
    if expanded:
        files = sorted(_glob(pattern, str(base_dir), roots_, reader))
    else:
        full = str(p if p.is_absolute() else Path(base_dir) / p)
        st = _stat(os.path.realpath(full), pattern, reader, roots_)
        expanded = stat.S_ISDIR(st.st_mode) and reader.suffixes is not None
        files = sorted(_walk(full, pattern, roots_, reader, lambda _n, _d: "all", None)) if expanded else [full]
    total = sum(check_file(f, os.path.relpath(f, base_dir) if expanded else pattern, roots_, reader).st_size
                for f in files)
    if reader.suffixes == () and total > reader.max_bytes():  # a table: its files together
        raise _too_large(reader, pattern, total)
    return files


def module_reader(base_dir: str | os.PathLike) -> Callable[[Path], str]:
    """How etl.spec.signature reads a function's module: one beside the pipeline (its path under `base_dir`)
    through `resolve` (inside the allowed folders, a regular file within the cap), an installed one as a regular
    file within the cap; a refusal is a SignatureError with the guard's code, message and hint."""
    def read(file: Path) -> str:
        rel = os.path.relpath(file, base_dir)
        try:
            if not rel.startswith(".." + os.sep):
                resolve(rel, base_dir, MODULES)
            return read_text(str(file), MODULES, rel if not rel.startswith(".." + os.sep) else str(file))
        except PathError as e:
            raise SignatureError(e.code, e.message, e.hint) from None
    return read


def resolve_rule_paths(pattern: str, base_dir: str | os.PathLike) -> list[str]:
    """Files named by one `rule_files` entry (sorted), all inside the pipeline's folder tree or an
    --allow-path folder, all regular files within the cap; PathError otherwise."""
    return resolve(pattern, base_dir, RULE_FILES)
