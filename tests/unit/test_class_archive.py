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


def test_the_folder_keeps_the_archives_used_last_and_drops_dead_writers_leftovers(cache, tmp_path):
    """Every new etl jar, pyspark or JDK makes a new archive (about 180 MB): the folder keeps KEEP of them, those
    whose starts came last, and what killed writers of any key left behind."""
    cache.mkdir(parents=True)
    now = time.time()

    def made(name: str, age_s: float, data: bytes = class_archive.MAGIC + b"\0" * 64):
        path = cache / name
        path.write_bytes(data)
        os.utime(path, (now - age_s, now - age_s))
        return path

    used = [made(f"classes-old{i}.jsa", 1000 + i) for i in range(4)]  # old0 used last, old3 first
    dead = [made("classes-gone.7-7.part", class_archive.DUMPING_FOR_S + 5, b"\0" * 68),
            made("classes-gone.dumping", class_archive.DUMPING_FOR_S + 5, b"")]
    live = [made("classes-busy.8-8.part", 5, b"\0" * 68), made("classes-busy.dumping", 5, b""),
            made("classes-done.9-9.part", class_archive.DUMPING_FOR_S + 5)]  # complete: its key's next start moves it
    os.utime(used[3])  # mapped by a start just now (options() marks it so)
    jar = tmp_path / "etl.jar"
    jar.write_bytes(b"x")
    name = f"classes-{class_archive.key(str(jar))}"
    made(f"{name}.1-1.part", 30)  # written at exit by the last JVM of this class path
    assert class_archive.options(str(jar)) == f"-XX:SharedArchiveFile={cache}/{name}.jsa -Xlog:cds*=off"
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [f"{name}.jsa", used[3].name, used[0].name] + [p.name for p in live])
    assert not any(p.exists() for p in dead)


def test_a_start_that_maps_an_archive_marks_it_used_and_removes_the_oldest(cache, tmp_path):
    jar = tmp_path / "etl.jar"
    jar.write_bytes(b"x")
    archive = cache / f"classes-{class_archive.key(str(jar))}.jsa"
    cache.mkdir(parents=True)
    archive.write_bytes(class_archive.MAGIC)
    os.utime(archive, (1000, 1000))  # the oldest of the folder until this start
    others = [cache / f"classes-other{i}.jsa" for i in range(4)]
    for i, other in enumerate(others):
        other.write_bytes(class_archive.MAGIC)
        os.utime(other, (2000 - i, 2000 - i))
    assert class_archive.options(str(jar)).startswith(f"-XX:SharedArchiveFile={archive} ")
    assert archive.stat().st_mtime > time.time() - 60
    assert sorted(p.name for p in cache.glob("*.jsa")) == sorted([archive.name, others[0].name, others[1].name])


def test_build_that_finds_its_archive_marks_it_used_and_keeps_it(cache, tmp_path, monkeypatch):
    from etl.compile import jvm

    jar = tmp_path / "etl.jar"
    jar.write_bytes(b"x")
    monkeypatch.setattr(jvm, "jar", lambda: jar)
    archive = cache / f"classes-{class_archive.key(str(jar))}.jsa"
    cache.mkdir(parents=True)
    archive.write_bytes(class_archive.MAGIC)
    os.utime(archive, (1000, 1000))  # made long ago, the oldest of the folder
    others = [cache / f"classes-other{i}.jsa" for i in range(4)]
    for i, other in enumerate(others):
        other.write_bytes(class_archive.MAGIC)
        os.utime(other, (2000 - i, 2000 - i))
    assert class_archive.build() == archive
    assert sorted(p.name for p in cache.glob("*.jsa")) == sorted([archive.name, others[0].name, others[1].name])
