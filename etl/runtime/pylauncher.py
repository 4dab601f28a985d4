"""The Python executable Spark starts for workers on this machine: this interpreter, minus Spark's zips.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` and py4j's zip first on the
PYTHONPATH of every Python process it starts (worker daemons, the planners of
Python data sources, streaming source runners). With pip's pyspark, SPARK_HOME
is the installed package, so the zips hold the modules site-packages already
has -- without their bytecode: each of those processes compiles pyspark from
source again. Importing what a worker needs takes about 0.85 s from the zip and
0.2 s from site-packages; a query reading a Python data source (the generator,
RocketMQ) starts several such processes before its first micro-batch.

`worker_python()` writes a small POSIX shell launcher (once per content, in
etl's cache folder) that removes exactly those two entries from PYTHONPATH and
execs this interpreter; build_session hands it to Spark as PYSPARK_PYTHON for
local masters when the user has not chosen a Python. Any other layout (a Spark
distribution whose Python side lives only in the zip, no /bin/sh) gets the
interpreter itself, unchanged, and so does a launcher that does not run (a cache
folder on a noexec mount): it is tried once per process.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shlex
import subprocess
import sys

from etl.diskcache import cache_root, write_atomically

LAUNCHER = """\
#!/bin/sh
# etl: start {python} without Spark's copies of pyspark and py4j on PYTHONPATH
# (the installed packages are the same, with bytecode; see etl/runtime/pylauncher.py)
set -f
kept=
IFS=:
for p in ${{PYTHONPATH-}}; do
  case "$p" in
    {patterns}) ;;
    *) kept="${{kept:+$kept:}}$p" ;;
  esac
done
unset IFS
if [ -n "$kept" ]; then PYTHONPATH=$kept; export PYTHONPATH; else unset PYTHONPATH; fi
exec {python} "$@"
"""


def redundant_zips(spark_home: str | None = None) -> list[str]:
    """The PYTHONPATH entries Spark adds that duplicate installed packages ([] when none do)."""
    import pyspark

    if spark_home is None:
        from pyspark.find_spark_home import _find_spark_home

        spark_home = _find_spark_home()
    pkg = os.path.dirname(os.path.abspath(pyspark.__file__))
    if not spark_home or os.path.realpath(spark_home) != os.path.realpath(pkg) or ".zip" in pkg:
        return []  # a separate Spark distribution: its zip is what workers import
    lib = os.path.join(spark_home, "python", "lib")
    zips = [os.path.join(lib, "pyspark.zip")]
    py4j = importlib.util.find_spec("py4j")
    if py4j is not None and py4j.origin and ".zip" not in py4j.origin and os.path.isdir(lib):  # py4j installed too
        zips += [os.path.join(lib, f) for f in sorted(os.listdir(lib)) if f.startswith("py4j") and f.endswith(".zip")]
    forms = []
    for z in zips:  # as Spark spells it (SPARK_HOME as given) and resolved
        for form in (z, os.path.realpath(z)):
            if form not in forms:
                forms.append(form)
    return forms


def launcher_text(python: str, zips: list[str]) -> str:
    return LAUNCHER.format(python=shlex.quote(python), patterns="|".join(shlex.quote(z) for z in zips))


def worker_python(python: str | None = None) -> str:
    """The executable for Spark's Python processes: a launcher around `python` (default: this one), or
    `python` itself when there is nothing to remove or no shell to run a launcher."""
    python = python or sys.executable
    if os.name != "posix" or not os.path.exists("/bin/sh"):
        return python
    try:
        zips = redundant_zips()
    except Exception:  # noqa: BLE001 - an unusual installation: leave Spark's path alone
        return python
    if not zips:
        return python
    text = launcher_text(python, zips)
    path = cache_root() / "bin" / f"python-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if not os.access(path, os.X_OK):
        try:
            write_atomically(path, text.encode(), mode=0o755)
        except OSError:
            return python
    return str(path) if _runs(str(path)) else python


@functools.lru_cache(maxsize=16)
def _runs(launcher: str) -> bool:
    """Whether the launcher starts Python here (not on a noexec mount, say); checked once per process (a launcher
    is a file named by its content's digest: the answer does not change while the process runs)."""
    try:
        done = subprocess.run([launcher, "-S", "-c", "pass"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
