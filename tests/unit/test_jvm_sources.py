"""etl's Java sources compile with every javac lint warning as an error (the flags etl/compile/jvm.py builds with)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from etl.compile import jvm


def test_the_flags_turn_lint_warnings_into_errors():
    assert jvm.JAVAC_FLAGS[:2] == ("-Xlint:all,-path,-classfile", "-Werror")


@pytest.mark.slow  # javac: a JVM of its own, 10-40 s
def test_the_sources_compile_without_a_lint_warning(tmp_path):
    import pyspark

    javac = shutil.which("javac")
    assert javac is not None, "a JDK (javac) is part of the set-up (README: Java 17)"
    jars = Path(pyspark.__file__).parent / "jars"
    p = subprocess.run([javac, *jvm.JAVAC_FLAGS, "-d", str(tmp_path), "-cp", f"{jars}/*",
                        *map(str, jvm.sources())], capture_output=True, text=True, timeout=600)
    assert (p.returncode, p.stderr) == (0, "")
    assert len(list(tmp_path.rglob("*.class"))) >= len(jvm.sources())
    # the same warning is an error: a raw generic array without its @SuppressWarnings
    bad = tmp_path / "src" / "etl" / "jvm" / "Raw.java"
    bad.parent.mkdir(parents=True)
    bad.write_text("package etl.jvm;\nfinal class Raw<T> {\n    final Raw<T>[] slots = new Raw[2];\n}\n")
    p = subprocess.run([javac, *jvm.JAVAC_FLAGS, "-d", str(tmp_path / "out"), str(bad)], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 1 and "[rawtypes] found raw type: Raw" in p.stderr
    assert "error: warnings found and -Werror specified" in p.stderr
