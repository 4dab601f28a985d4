"""The launcher Spark runs Python through on a local master: Spark's zips off PYTHONPATH, the rest kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from etl.runtime.pylauncher import launcher_text, redundant_zips, worker_python

SHOW = "import os; print(os.environ.get('PYTHONPATH', '<unset>'))"


def run_launcher(tmp_path: Path, zips: list[str], pythonpath: str | None) -> str:
    script = tmp_path / "python-launcher"
    script.write_text(launcher_text(sys.executable, zips))
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([str(script), "-c", SHOW], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_the_launcher_drops_exactly_the_listed_entries_and_keeps_the_order(tmp_path):
    zips = ["/opt/x y/python/lib/pyspark.zip", "/opt/x y/python/lib/py4j-0.10.9.9-src.zip"]
    path = os.pathsep.join(["/a", zips[0], "/b*c", "/opt/x y/python/lib/other.zip", zips[1], "/d"])
    assert run_launcher(tmp_path, zips, path) == os.pathsep.join(["/a", "/b*c", "/opt/x y/python/lib/other.zip",
                                                                   "/d"])
    assert run_launcher(tmp_path, zips, os.pathsep.join(zips)) == "<unset>"
    assert run_launcher(tmp_path, zips, None) == "<unset>"
    # arguments reach the interpreter unchanged
    script = tmp_path / "python-launcher"
    out = subprocess.run([str(script), "-c", "import sys; print(sys.argv[1:])", "a b", "$HOME", "*"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['a b', '$HOME', '*']"


def test_a_separate_spark_distribution_keeps_its_zips(tmp_path):
    assert redundant_zips(str(tmp_path)) == []


def test_pips_pyspark_gets_a_launcher_named_by_its_content(tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_CACHE_DIR", str(tmp_path))
    zips = redundant_zips()
    assert [os.path.basename(z) for z in zips][:1] == ["pyspark.zip"]
    exe = worker_python()
    assert Path(exe).parent == tmp_path / "bin" and os.access(exe, os.X_OK)
    assert Path(exe).read_text() == launcher_text(sys.executable, zips)
    assert worker_python() == exe  # written once


def test_a_launcher_that_cannot_start_python_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_CACHE_DIR", str(tmp_path))
    missing = str(tmp_path / "no-such-python")
    assert worker_python(missing) == missing  # the launcher was written, tried, and failed: Spark gets `python`
    assert len(list((tmp_path / "bin").iterdir())) == 1
