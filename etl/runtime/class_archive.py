"""A class-data archive of the driver JVM (the JDK's CDS, a dynamic archive): the classes a run loads from
Spark's jars and etl's, parsed and verified once and mapped from a file by every later JVM.

Most of a short run's CPU is the JVM starting Spark: loading, verifying and linking some 15,000 classes.
Measured on this machine (a local session started, one count, stopped; C1 only as in the test suite; medians
of 3 alternating runs): 9.1 CPU-s without the archive, 4.6 with it; wall 25 s against 10 s under load.

ETL_JVM_CLASS_ARCHIVE=auto (the default): a driver JVM etl starts maps `<cache>/jvm/classes-<key>.jsa` when it
exists. When it does not, that JVM writes it when it exits (-XX:ArchiveClassesAtExit: a few seconds of CPU
once, after the run), to a temporary name; a later start finds it complete (the JDK writes the archive's
header last: its magic number is the proof) and moves it in place. `build()` makes it at once (the test suite
does, and `make setup-java`). The key covers what the JVM checks before it maps an archive (its own build, the
class path's jars by name, size and time), so a new JDK, pyspark or etl jar gets a new archive: a stale one is
never tried, and the folder keeps the KEEP archives used last (each about 180 MB: one more for every new etl
jar, pyspark or JDK; a start that maps one marks it used; each start removes the others). The JVM's messages
about the archive are off (a rejected archive is only a slower start).
A cluster's executors start from their own class path: they start as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from etl.compile import jvm

try:
    import fcntl
except ImportError:  # Windows: no lock (two builds at once each write a part; one wins)
    fcntl = None  # type: ignore[assignment]

from etl import settings
from etl.diskcache import cache_root

MAGIC = bytes.fromhex("a8ab0bf0")  # 0xf00baba8 little-endian: a dynamic archive whose header is written
QUIET = "-Xlog:cds*=off"
DUMPING_FOR_S = 600  # a newer marker: another JVM is writing the archive, this one does not
KEEP = 3  # archives kept (the one just made among them): two checkouts or venvs used in turn keep theirs


def _stat(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def java_binary() -> Path | None:
    """The java spark-submit starts: JAVA_HOME's, else the PATH's."""
    home = settings.current().java_home
    java = Path(home) / "bin" / "java" if home else None
    found = str(java) if java and java.exists() else shutil.which("java")
    return Path(found).resolve() if found else None


def key(extra_class_path: str) -> str | None:
    """What the JVM checks before it maps an archive: its build and its class path (etl's jar and the user's
    entries first, then Spark's jars). None without a java."""
    from pyspark.find_spark_home import _find_spark_home

    java = java_binary()
    if java is None:
        return None
    home = java.parents[1]
    parts = [_stat(java), *(_stat(p) for p in sorted(home.glob("lib/server/*.so")))]
    parts += [_stat(Path(p)) for p in extra_class_path.split(os.pathsep) if p]
    parts += [_stat(p) for p in sorted((Path(_find_spark_home()) / "jars").glob("*.jar"))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def _folder() -> Path:
    return cache_root() / "jvm"


def _complete(part: Path) -> bool:
    """The JDK has written the archive's header (it does so last)."""
    with open(part, "rb") as fh:
        return fh.read(4) == MAGIC


def _finish(folder: Path, name: str) -> Path | None:
    """The archive, marked used now (_prune keeps the archives used last), moving a complete one written by an
    earlier JVM in place first (unfinished ones: _prune)."""
    final = folder / f"{name}.jsa"
    for part in () if final.exists() else folder.glob(f"{name}.*.part"):
        try:
            if _complete(part):
                os.replace(part, final)
        except OSError:
            continue
    if not final.exists():
        return None
    with contextlib.suppress(OSError):  # a read-only cache: used all the same
        os.utime(final)
    (folder / f"{name}.dumping").unlink(missing_ok=True)
    return final


def _prune(folder: Path) -> None:
    """Remove all but the KEEP archives used last (by modification time: a start that maps one touches it), and
    any key's unfinished part or writer's marker older than DUMPING_FOR_S (a JVM killed while writing). A JVM
    mapping a removed archive keeps its mapping."""
    def age(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    archives = sorted(folder.glob("classes-*.jsa"), key=age, reverse=True)
    old = [p for p in [*folder.glob("classes-*.part"), *folder.glob("classes-*.dumping")]
           if time.time() - age(p) > DUMPING_FOR_S]
    for path in archives[KEEP:] + old:
        try:
            if path.suffix != ".part" or not _complete(path):
                path.unlink()
        except OSError:  # gone already, or another user's
            continue


def options(extra_class_path: str) -> str:
    """The driver JVM's options: map the archive, or write it at exit (one writer at a time), or nothing."""
    if not settings.current().jvm_class_archive:
        return ""
    name = key(extra_class_path)
    if name is None:
        return ""
    name = f"classes-{name}"
    folder = _folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        archive = _finish(folder, name)
        _prune(folder)
        if archive is not None:
            return f"-XX:SharedArchiveFile={archive} {QUIET}"
        marker = folder / f"{name}.dumping"
        if marker.exists() and time.time() - marker.stat().st_mtime < DUMPING_FOR_S:
            return ""
        marker.touch()
    except OSError:  # a read-only cache: start as before
        return ""
    part = folder / f"{name}.{os.getpid()}-{time.monotonic_ns()}.part"
    return f"-XX:ArchiveClassesAtExit={part} {QUIET}"


WORKLOAD = """\
name: class-archive
sources:
  - id: events
    type: generator
    count: 400
    rate: 100
    seed: 1
    start_time: "2026-01-01T00:00:00Z"
    fields:
      ts: {timestamp: event}
      user: {choice: [ann, bob, carl]}
      code: {int_range: [100, 600]}
    event_time: {field: ts, watermark: 1s}
transforms:
  - {id: kept, type: filter, input: events, rules: [{id: a, when: {field: user, contains: a}}]}
  - id: per_user
    type: window
    input: kept
    kind: tumbling
    size: 1s
    group_by: [user]
    aggregates: [{fn: count, as: n}, {fn: max, field: code, as: top}]
sinks:
  - {id: out, type: file, input: per_user, path: out}
checkpoint: state
"""


def build(timeout_s: float = 300.0) -> Path | None:
    """Write the archive now (an `etl run --once` of a small pipeline whose JVM writes it at exit); its path,
    or None when it could not be made (no java, a read-only cache, ETL_JVM_CLASS_ARCHIVE=off). Processes
    calling it at once take turns: one writes it, the others find it."""
    if not settings.current().jvm_class_archive:
        return None
    jar = jvm.jar()
    name = key(str(jar) if jar else "")
    if name is None:
        return None
    name = f"classes-{name}"
    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "build.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        archive = _finish(folder, name) or _write(folder, name, timeout_s)
        _prune(folder)
        return archive


def _write(folder: Path, name: str, timeout_s: float) -> Path | None:
    """Run the small pipeline whose JVM writes the archive at exit; the archive once it is complete."""
    (folder / f"{name}.dumping").unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="etl-class-archive-") as work:
        Path(work, "p.yaml").write_text(WORKLOAD)
        here = str(Path(__file__).resolve().parents[2])  # this etl, also when another one is installed
        launch = f"import sys; sys.path.insert(0, {here!r}); from etl.cli import main; main()"
        quick = "off" if settings.current().jvm_quick_jit is False else "on"
        run = subprocess.run([sys.executable, "-c", launch, "run", "p.yaml", "--once", "--quiet",
                              "--set", f"ETL_JVM_QUICK_JIT={quick}", "--conf", "spark.ui.enabled=false"],
                             cwd=work, timeout=timeout_s, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             check=False)
    archive = None
    deadline = time.monotonic() + (timeout_s if run.returncode == 0 else 0)
    while archive is None and time.monotonic() < deadline:  # the JVM writes it after the Python process ends
        time.sleep(0.5)
        archive = _finish(folder, name)
    return archive

if __name__ == "__main__":
    made = build()
    print(f"class archive: {made}" if made else "class archive: not made", file=sys.stderr)
    sys.exit(0 if made else 1)
