"""etl's own files under the shared temporary folder (the cache with ETL_CACHE_DIR=off: jar, class archive,
Python launcher, log4j2 settings; the default lookup folder) live in a folder of this user only: one that
another user made first, a symlink, or one others may write to is never used (etl.diskcache.private_dir)."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from etl import diskcache, settings

ROOT = Path(__file__).resolve().parents[2]
UID = os.getuid()


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of its own as the shared /tmp, the cache off, nothing remembered."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setattr(diskcache, "_PRIVATE", {})
    monkeypatch.setenv("ETL_CACHE_DIR", "off")
    monkeypatch.delenv("ETL_LOOKUP_DIR", raising=False)
    settings.reset()
    yield shared
    settings.reset()


def _plant(kind: str, folder: Path, victim: Path) -> str:
    """Make `folder` as an attacker would, before etl; return why etl must not use it."""
    if kind == "foreign":
        folder.mkdir(mode=0o700)
        nobody = pwd.getpwnam("nobody")
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        return f"belongs to uid {nobody.pw_uid}"
    if kind == "symlink":
        folder.symlink_to(victim)
        return "is a symlink"
    if kind == "writable":
        folder.mkdir()
        os.chmod(folder, 0o777)
        return "may be written by others (mode 777)"
    folder.write_text("")
    return "is not a folder"


@pytest.mark.parametrize("kind", ["foreign", "symlink", "writable", "file"])
@pytest.mark.parametrize("name,where", [("etl-cache", diskcache.cache_root),
                                        ("etl-lookup", lambda: Path(_lookup_dir()))], ids=["cache", "lookup"])
def test_a_planted_folder_is_bypassed_and_never_written(tmp: Path, capsys: pytest.CaptureFixture, kind: str,
                                                        name: str, where) -> None:
    victim = tmp.parent / "victim"
    victim.mkdir()
    planted = tmp / f"{name}-{UID}"
    why = _plant(kind, planted, victim)
    got = where()
    assert got != planted and got.parent == tmp and got.name.startswith(f"{name}-{UID}-")
    st = os.lstat(got)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == UID and stat.S_IMODE(st.st_mode) == 0o700
    assert capsys.readouterr().err == f"etl: {planted} {why}: not used; this run keeps its files in {got}\n"
    diskcache.write_atomically(got / "bin" / "python-x", b"#!/bin/sh\n", mode=0o755)
    assert where() == got  # asked again: the same folder, said once
    assert capsys.readouterr().err == ""
    assert list(victim.iterdir()) == []
    if kind in ("foreign", "writable"):
        assert list(planted.iterdir()) == []


def _lookup_dir() -> str:
    from etl.compile.lookups.store import default_base_dir

    return default_base_dir()


def test_the_private_folder_is_made_0700_and_used_again(tmp: Path, capsys: pytest.CaptureFixture) -> None:
    got = diskcache.cache_root()
    assert got == tmp / f"etl-cache-{UID}" and stat.S_IMODE(os.lstat(got).st_mode) == 0o700
    diskcache._PRIVATE.clear()  # another process of this user: the folder is its own, used as it is
    assert diskcache.cache_root() == got and capsys.readouterr().err == ""


def test_log4j_settings_are_one_stable_file_in_the_private_folder(tmp: Path) -> None:
    """Two runs (each its own Python, so its own string hash seed) use one file, named by its content's SHA-256
    in the private cache folder: the second leaves no new file; a planted cache folder is not written."""
    env = {**os.environ, "TMPDIR": str(tmp), "ETL_CACHE_DIR": "off", "PYTHONPATH": str(ROOT)}
    code = "from etl.runtime.session import _log4j_file; print(_log4j_file())"

    def run() -> str:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    first = run()
    after_first = sorted(str(p) for p in tmp.rglob("*"))
    assert run() == first and sorted(str(p) for p in tmp.rglob("*")) == after_first
    assert Path(first).parent == tmp / f"etl-cache-{UID}" / "log4j2"
    assert "rootLogger" in Path(first).read_text()
    os.rename(tmp / f"etl-cache-{UID}", tmp / "old")
    victim = tmp.parent / "victim"
    victim.mkdir()
    (tmp / f"etl-cache-{UID}").symlink_to(victim)
    third = run()
    assert not third.startswith(str(tmp / f"etl-cache-{UID}") + "/") and list(victim.iterdir()) == []
