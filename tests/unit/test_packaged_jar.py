"""etl's packaged jar (etl.physical.jar): used only when it carries the installed sources and pyspark version; the
planner's target says whence the jar comes; the JUnit fixtures (scripts/jvm_fixtures.py) are the current Python's."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from etl.physical import jar as packaged_jar
from etl.physical import target

ROOT = Path(__file__).resolve().parents[2]


def _sources(folder: Path) -> Path:
    folder.mkdir()
    (folder / "A.java").write_text("package etl.jvm;\nfinal class A {}\n")
    (folder / "B.java").write_text("package etl.jvm;\nfinal class B {}\n")
    return folder


def _jar(path: Path, sources: dict[str, bytes], version: str | None = "4.3.0") -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: Maven JAR Plugin 3.4.2\r\n"
                   + (f"Etl-Pyspark-Version: {version}\r\n" if version else ""))
        z.writestr("etl/jvm/A.class", b"\xca\xfe\xba\xbe")
        for name, body in sources.items():
            z.writestr(packaged_jar.IN_JAR + name, body)
    return path


def test_a_jar_of_the_installed_sources_and_pyspark_is_used(tmp_path):
    src = _sources(tmp_path / "jvm")
    same = {f.name: f.read_bytes() for f in src.glob("*.java")}
    assert packaged_jar.check(_jar(tmp_path / "j.jar", same), src, "4.3.0") is None


def test_any_other_jar_is_not_and_says_why(tmp_path):
    src = _sources(tmp_path / "jvm")
    same = {f.name: f.read_bytes() for f in src.glob("*.java")}
    assert packaged_jar.check(tmp_path / "none.jar", src, "4.3.0") == "no packaged jar (none.jar: `make jar` builds it)"
    assert packaged_jar.check(_jar(tmp_path / "j.jar", same), src, "4.2.0") == (
        "the packaged jar was built against pyspark 4.3.0, pyspark 4.2.0 is installed")
    assert packaged_jar.check(_jar(tmp_path / "v.jar", same, version=None), src, "4.3.0") == (
        "the packaged jar was built against pyspark ?, pyspark 4.3.0 is installed")
    edited = {**same, "B.java": same["B.java"] + b"// edited\n"}
    assert packaged_jar.check(_jar(tmp_path / "e.jar", edited), src, "4.3.0") == (
        "the packaged jar was built from other sources (B.java differ)")
    (src / "C.java").write_text("package etl.jvm;\nfinal class C {}\n")  # a source the jar has not
    assert packaged_jar.check(_jar(tmp_path / "c.jar", edited), src, "4.3.0") == (
        "the packaged jar was built from other sources (C.java, B.java differ)")
    (tmp_path / "bad.jar").write_bytes(b"not a zip")
    assert packaged_jar.check(tmp_path / "bad.jar", src, "4.3.0") == (
        "the packaged jar cannot be read (File is not a zip file)")


def test_the_target_says_whence_the_jar_comes(monkeypatch):
    monkeypatch.setattr(packaged_jar, "packaged", lambda: (Path("/x/etl-jvm.jar"), ""))
    monkeypatch.setattr(target.shutil, "which", lambda name: None)  # a Java runtime only: no javac
    assert target.predicted_jvm() == (True, "", "packaged")
    assert target.planner_settings({}).text().startswith("master local[*], etl jar yes (packaged), rules_jvm on")
    monkeypatch.setattr(packaged_jar, "packaged", lambda: (None, "no packaged jar (etl-jvm.jar: `make jar` builds it)"))
    t = target.planner_settings({})
    assert (t.jvm, t.jdk) == (False, False)
    assert t.text().startswith("master local[*], etl jar no (no packaged jar (etl-jvm.jar: `make jar` builds it), "
                               "and javac/jar not found (install a JDK)), rules_jvm on")
    monkeypatch.setattr(target.shutil, "which", lambda name: f"/usr/bin/{name}")
    t = target.planner_settings({})
    assert (t.jvm, t.jdk) == (True, True)
    assert t.text().startswith("master local[*], etl jar yes (built with javac, the development path: no packaged "
                               "jar (etl-jvm.jar: `make jar` builds it)), rules_jvm on")


def test_a_run_takes_the_packaged_jar_and_javac_only_without_it(monkeypatch):
    from etl.compile import jvm

    def javac() -> Path:
        raise AssertionError("javac ran")

    monkeypatch.setattr(jvm, "_JAR", {})
    monkeypatch.setattr(jvm, "_WHY", [])
    monkeypatch.setattr(packaged_jar, "packaged", lambda: (Path("/x/etl-jvm.jar"), ""))
    monkeypatch.setattr(jvm, "_build", javac)
    assert jvm.jar() == Path("/x/etl-jvm.jar")
    assert jvm.launch_conf({}) == {"spark.driver.extraClassPath": "/x/etl-jvm.jar"}
    why = "the packaged jar was built from other sources (RuleMatch.java differ)"
    monkeypatch.setattr(jvm, "_JAR", {})
    monkeypatch.setattr(packaged_jar, "packaged", lambda: (None, why))
    monkeypatch.setattr(jvm, "_build", lambda: Path("/cache/jars/etl-jvm-0123.jar"))
    assert jvm.jar() == Path("/cache/jars/etl-jvm-0123.jar")  # the development path
    monkeypatch.setattr(jvm, "_JAR", {})
    def no_jdk() -> Path:
        raise RuntimeError("javac/jar not found (install a JDK)")

    monkeypatch.setattr(jvm, "_build", no_jdk)
    assert jvm.jar() is None
    assert jvm.unavailable_reason() == f"{why}; javac/jar not found (install a JDK)"


def test_the_junit_fixtures_are_the_current_pythons():
    # in a process of its own: a rule program's long classes are numbered in the order a process first translates
    # them (etl.regexes.javaregex's shared marks), so the text depends on what the process translated before
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "jvm_fixtures.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
