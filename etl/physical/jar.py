"""etl's packaged jar: etl/jvm/etl-jvm.jar, built by Maven (java/etl-jvm: `make jar`) and shipped in the wheel.

A run uses it when it is the jar of the installed sources: it carries the sources it was compiled from (under
META-INF/etl-jvm/sources/) and the pyspark version it was compiled against (its manifest's
Etl-Pyspark-Version), and both must be the installed ones, byte for byte and version for version. Then a run needs
only a Java runtime. Otherwise (a checkout whose etl/jvm/*.java changed since `make jar`, another pyspark, no
jar) etl.compile.jvm compiles the sources with javac: the development path, which needs a JDK; `etl explain`'s
target line says which (etl.physical.target).

Pure Python (zipfile, package metadata): the planner asks it without starting a JVM or importing pyspark.
"""

from __future__ import annotations

import functools
import zipfile
from importlib import metadata
from pathlib import Path

SOURCES = Path(__file__).resolve().parents[1] / "jvm"
PACKAGED = SOURCES / "etl-jvm.jar"
IN_JAR = "META-INF/etl-jvm/sources/"  # java/etl-jvm/pom.xml's resources
VERSION_KEY = "Etl-Pyspark-Version"


def _manifest_value(text: str, key: str) -> str | None:
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return None


def check(jar: Path, sources: Path, pyspark_version: str) -> str | None:
    """Why `jar` is not the jar of the *.java files of `sources` compiled against `pyspark_version` (None: it is)."""
    if not jar.is_file():
        return f"no packaged jar ({jar.name}: `make jar` builds it)"
    try:
        with zipfile.ZipFile(jar) as z:
            names = set(z.namelist())
            built = _manifest_value(z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace"), VERSION_KEY)
            if built != pyspark_version:
                return f"the packaged jar was built against pyspark {built or '?'}, pyspark {pyspark_version} is installed"
            own = {f.name: f for f in sorted(sources.glob("*.java"))}
            packed = {n[len(IN_JAR):] for n in names if n.startswith(IN_JAR) and n.endswith(".java")}
            differ = sorted(set(own) ^ packed) + sorted(
                name for name in set(own) & packed if z.read(IN_JAR + name) != own[name].read_bytes())
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        return f"the packaged jar cannot be read ({e})"
    if differ:
        more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
        return f"the packaged jar was built from other sources ({', '.join(differ[:3])}{more} differ)"
    return None


def pyspark_version() -> str:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "?"


@functools.lru_cache(maxsize=1)
def packaged() -> tuple[Path | None, str]:
    """(the packaged jar, "") when a run can use it as it is, else (None, why not)."""
    why = check(PACKAGED, SOURCES, pyspark_version())
    return (PACKAGED, "") if why is None else (None, why)
