"""On-disk cache of compiled rule programs and Hyperscan databases.

Compiling 10,000 regex rules takes 15-25 s, nearly all of it inside Hyperscan
(``\\s+`` between literals, ``\\b``, unbounded ``.*``/``\\S*`` are the costly
constructs). The result only depends on the input, so it is kept on disk:

* ``hs/<key>.db``: a serialized Hyperscan database (``hyperscan.dumpb``), keyed
  by its expressions, ids and flags, the hyperscan version and the machine's
  CPU features (a database is compiled for the CPU it is built on); used by the
  fallback pass for databases of at least ``MIN_PATTERNS`` patterns;
* ``programs/<key>.pickle``: a whole FilterProgram, keyed by the rules' JSON,
  the optimizer's source code and the same platform facts; used by
  ``compile_rules(..., cache=True)`` (``etl explain``/``etl run``) for rule
  sets of at least ``MIN_RULES`` rules.

The folder is ``$ETL_CACHE_DIR``, else ``$XDG_CACHE_HOME/etl``, else
``~/.cache/etl``; ``ETL_CACHE_DIR=off`` switches the cache off. Files are
written atomically (temporary file + rename) with a SHA-256 of their content
in front; a damaged or unreadable file is ignored (and recompiled). Nothing
is ever evicted automatically: delete the folder to reclaim the space.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pickle
import platform
import shutil
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from etl.settings import current
from etl.workercache import WorkerCache

MIN_PATTERNS = 64
MIN_RULES = 64
_MAGIC = b"etl-cache-1\n"
_VERSIONED = ("optimize", "matching", "regexes")  # packages whose code a cached program or memo depends on


def cache_dir() -> Path | None:
    folder = current().cache_dir  # ETL_CACHE_DIR, else $XDG_CACHE_HOME/etl, else ~/.cache/etl; None: off
    return Path(folder) if folder is not None else None


def cache_root() -> Path:
    """cache_dir(), or a private per-user folder under the temporary directory when the cache is off: for files
    other parts of etl must keep somewhere (the prefilter's jar and literal sets, the Python launcher, the class
    archive, log4j2's settings)."""
    return cache_dir() or private_tmp("etl-cache")


def private_tmp(name: str) -> Path:
    """This user's private `<tmp>/<name>-<uid>` (private_dir)."""
    return private_dir(Path(tempfile.gettempdir()) / f"{name}-{_uid()}")


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


_PRIVATE: dict[str, Path] = {}  # folder asked for -> the folder used, for this process


def private_dir(path: Path) -> Path:
    """`path` as a folder only this user may use, made 0700 when missing. An existing one that is a symlink,
    belongs to another user or that others may write to (someone made it first in a shared /tmp to plant a
    launcher or a symlink there) is never used: a fresh folder of mkdtemp beside it instead, removed when the
    process exits (said once on stderr)."""
    key = str(path)
    got = _PRIVATE.get(key)
    if got is not None:
        return got
    try:
        path.mkdir(mode=0o700, parents=False)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return private_dir(path)
    st = os.lstat(path)
    why = ("is a symlink" if stat.S_ISLNK(st.st_mode) else "is not a folder" if not stat.S_ISDIR(st.st_mode)
           else f"belongs to uid {st.st_uid}" if st.st_uid != _uid()
           else f"may be written by others (mode {stat.S_IMODE(st.st_mode):o})" if st.st_mode & 0o022 else None)
    if why is None:
        _PRIVATE[key] = path
        return path
    own = Path(tempfile.mkdtemp(prefix=f"{path.name}-", dir=path.parent))
    atexit.register(shutil.rmtree, own, ignore_errors=True)
    sys.stderr.write(f"etl: {path} {why}: not used; this run keeps its files in {own}\n")
    _PRIVATE[key] = own
    return own


def write_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """`path` holds `data` whole or not at all (other processes may read it at any moment); `mode` is set
    before the file appears under its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    if mode is not None:
        os.chmod(part, mode)
    os.replace(part, path)


@lru_cache(maxsize=1)
def platform_tag() -> str:
    """What a compiled database depends on besides its patterns: hyperscan version, CPU and its features."""
    import hyperscan

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    version = getattr(hyperscan, "__version__", "?")
    return f"hyperscan {version} {platform.machine()} {hashlib.sha256(flags.encode()).hexdigest()[:16]}"


@lru_cache(maxsize=1)
def optimizer_version() -> str:
    """Digest of the optimizer's and the rule runtime's source: a changed optimizer never reuses an old program."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for pkg in _VERSIONED:
        for f in sorted((here / pkg).glob("*.py")):
            h.update(f"{pkg}/{f.name}".encode() + b"\0" + f.read_bytes())
    h.update((here / "spec" / "rules.py").read_bytes())  # the rule language itself
    return h.hexdigest()


def database_key(expressions: Iterable[bytes], ids: Iterable[int], flags: Iterable[int]) -> str:
    h = hashlib.sha256(platform_tag().encode() + b"\n")
    for e, i, f in zip(expressions, ids, flags, strict=True):
        h.update(b"%d %d %d:" % (i, f, len(e)) + e + b"\n")
    return h.hexdigest()


def program_key(rule_texts: Iterable[str]) -> str:
    h = hashlib.sha256((platform_tag() + "\n" + optimizer_version() + "\n").encode())
    for t in rule_texts:
        h.update(t.encode("utf-8") + b"\n")
    return h.hexdigest()


def _path(kind: str, key: str, suffix: str) -> Path | None:
    d = cache_dir()
    return None if d is None else d / kind / f"{key}{suffix}"


def read(kind: str, key: str, suffix: str) -> bytes | None:
    path = _path(kind, key, suffix)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    body = data[head:]
    if hashlib.sha256(body).digest() != data[len(_MAGIC):head]:
        return None
    return body


def write(kind: str, key: str, suffix: str, body: bytes) -> None:
    """Store atomically; a cache that cannot be written is no error (the result is just not kept)."""
    path = _path(kind, key, suffix)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + hashlib.sha256(body).digest() + body)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass


def load_database(key: str) -> bytes | None:
    return read("hs", key, ".db")


def store_database(key: str, serialized: bytes) -> None:
    write("hs", key, ".db", serialized)


def load_program(key: str) -> Any:
    body = read("programs", key, ".pickle")
    if body is None:
        return None
    try:
        return pickle.loads(body)
    except Exception:  # noqa: BLE001 - an unreadable entry (e.g. written by another etl) is recompiled
        return None


def store_program(key: str, program: Any) -> None:
    write("programs", key, ".pickle", pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL))


# a memo's name -> its function (a fixed set of names in etl's code; each reads its disk file once)
_MEMOS: WorkerCache[str, Any] = WorkerCache("disk memos", None)


def memo(name: str, fn: Any) -> Any:
    """`fn` (a pure function of hashable arguments, of the optimizer's code) with its results kept in
    ``memo/<key>.pickle``, one file per `name`, the optimizer's version and platform: read once per process,
    rewritten after each new result."""
    got = _MEMOS.get(name)
    if got is not None:
        return got
    key = hashlib.sha256(f"{name}\n{platform_tag()}\n{optimizer_version()}".encode()).hexdigest()
    table: dict = {}
    body = read("memo", key, ".pickle") if cache_dir() is not None else None
    if body is not None:
        try:
            table = pickle.loads(body)
        except Exception:  # noqa: BLE001 - a damaged file is rebuilt
            table = {}

    def remembered(*args: Any) -> Any:
        if args in table:
            return table[args]
        out = table[args] = fn(*args)
        write("memo", key, ".pickle", pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL))
        return out

    _MEMOS[name] = remembered
    return remembered
