"""The driver JVM's class archive (etl.runtime.class_archive): which options a JVM start gets, when the
archive is written, found complete, moved in place, or left alone. (That a real run maps it: the quickstart
test in tests/e2e/test_run_cli.py.)"""

from __future__ import annotations

import os
import time

import pytest

from etl import settings
from etl.runtime import class_archive


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ETL_JVM_CLASS_ARCHIVE", raising=False)
    settings.reset()
    yield tmp_path / "cache" / "jvm"
    settings.reset()


def test_first_start_writes_it_at_exit_and_one_writer_at_a_time(cache, tmp_path):
    jar = tmp_path / "etl.jar"
    jar.write_bytes(b"x")
    first = class_archive.options(str(jar))
    name = f"classes-{class_archive.key(str(jar))}"
    assert first.startswith(f"-XX:ArchiveClassesAtExit={cache}/{name}.{os.getpid()}-")
    assert first.endswith(".part -Xlog:cds*=off")
    assert (cache / f"{name}.dumping").exists()
    assert class_archive.options(str(jar)) == ""  # another JVM is writing it


def test_a_complete_part_is_moved_in_place_and_mapped(cache, tmp_path):
    jar = tmp_path / "etl.jar"
    jar.write_bytes(b"x")
    class_archive.options(str(jar))
    name = f"classes-{class_archive.key(str(jar))}"
    written = cache / f"{name}.123-4.part"
    written.write_bytes(class_archive.MAGIC + b"\0" * 64)  # the JDK writes the header (its magic) last
    assert class_archive.options(str(jar)) == f"-XX:SharedArchiveFile={cache}/{name}.jsa -Xlog:cds*=off"
    assert not written.exists() and not (cache / f"{name}.dumping").exists()


def test_an_unfinished_part_is_left_while_fresh_and_removed_when_old(cache, tmp_path):
    jar = tmp_path / "etl.jar"
    jar.write_bytes(b"x")
    name = f"classes-{class_archive.key(str(jar))}"
    cache.mkdir(parents=True)
    fresh, old = cache / f"{name}.1-1.part", cache / f"{name}.2-2.part"
    fresh.write_bytes(b"\0" * 68)  # header not written yet: a JVM is still writing it
    old.write_bytes(b"\0" * 68)
    stale = time.time() - class_archive.DUMPING_FOR_S - 5
    os.utime(old, (stale, stale))
    assert class_archive.options(str(jar)).startswith("-XX:ArchiveClassesAtExit=")
    assert fresh.exists() and not old.exists()


def test_the_key_follows_the_class_path(cache, tmp_path):
    jar = tmp_path / "etl.jar"
    jar.write_bytes(b"x")
    before = class_archive.key(str(jar))
    assert class_archive.key(str(jar)) == before
    jar.write_bytes(b"xy")  # a rebuilt jar: the JVM would reject the old archive
    assert class_archive.key(str(jar)) != before


def test_off_gives_no_option(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_JVM_CLASS_ARCHIVE", "off")
    settings.reset()
    assert class_archive.options("") == ""
    assert not cache.exists()
