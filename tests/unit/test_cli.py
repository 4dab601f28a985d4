"""The command line: exit codes, output formats, --strict, no pyspark import, python -m etl."""
import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from etl.cli import app

from .helpers import write

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "tests" / "fixtures" / "invalid"
runner = CliRunner()

VALID = """
name: v
sources:
  - {id: gen, type: generator, fields: {a: {sequence: 1}}}
  - {id: spare, type: generator, fields: {a: {sequence: 1}}}
sinks:
  - {id: out, type: print, input: gen}
"""


def run(*args, env=None):
    return runner.invoke(app, list(map(str, args)), env=env)


def test_valid_exit_0_and_warning_listed(tmp_path):
    p = write(tmp_path, "v.yaml", VALID)
    r = run("validate", p)
    assert r.exit_code == 0, r.output
    assert "W204 warning source 'spare'" in r.stdout
    r = run("validate", "--strict", p)
    assert r.exit_code == 1


def test_invalid_exit_1_text_format():
    r = run("validate", INVALID / "unknown_input.yaml")
    assert r.exit_code == 1
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("    ")]
    assert lines[0].endswith("unknown_input.yaml:7:12: E201 unknown input 'acess' of 'errors'")
    assert lines[-1].endswith("unknown_input.yaml:3:5: W204 warning source 'access' is not used by any transform or sink")
    assert "    hint: did you mean 'access'?" in r.stdout


def test_usage_errors_exit_2(tmp_path):
    assert run("validate", tmp_path / "missing.yaml").exit_code == 2
    assert run("validate", "--format", "xml", INVALID / "cycle.yaml").exit_code == 2
    (tmp_path / "empty").mkdir()
    assert run("validate", tmp_path / "empty").exit_code == 2
    assert run("explain", tmp_path / "missing.yaml").exit_code == 2
    assert run("validate").exit_code == 2
    assert run("validate", "--var", "novalue", INVALID / "cycle.yaml").exit_code == 2


def test_json_format(tmp_path):
    p = write(tmp_path, "v.yaml", VALID)
    r = run("validate", "--format", "json", p, INVALID / "cycle.yaml")
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["valid"] is False
    by_file = {Path(f["file"]).name: f for f in out["files"]}
    assert by_file["v.yaml"]["valid"] is True
    assert [w["code"] for w in by_file["v.yaml"]["warnings"]] == ["W204"]
    assert by_file["cycle.yaml"]["errors"] == [{
        "file": str(INVALID / "cycle.yaml"), "line": 6, "col": 5, "code": "E202", "severity": "error",
        "message": "cycle in the pipeline: b -> c -> a -> b", "hint": "a pipeline is a DAG: break the loop"}]


def test_folder_and_every_problem_in_one_run():
    r = run("validate", INVALID)
    assert r.exit_code == 1
    files = {ln.split(":", 1)[0] for ln in r.stdout.splitlines() if not ln.startswith(" ")}
    assert len({Path(f).name for f in files}) >= 40
    assert "E999" not in r.stdout


def test_env_values_redacted_in_explain_and_messages(tmp_path):
    p = write(tmp_path, "s.yaml", """
        name: s
        sources:
          - {id: k, type: kafka, bootstrap_servers: '{{ env("ETL_T_BOOT") }}', topics: [t]}
        sinks:
          - {id: out, type: mysql, input: k, database: d, user: u, password: '{{ env("ETL_T_PW") }}', table: t,
             port: '{{ env("ETL_T_PORT") }}'}
        """)
    env = {"ETL_T_BOOT": "secret-host:9092", "ETL_T_PW": "hunter2", "ETL_T_PORT": "not-a-port"}
    r = run("validate", p, env=env)
    assert r.exit_code == 1
    assert "not-a-port" not in r.stdout and "***" in r.stdout
    env["ETL_T_PORT"] = "3306"
    r = run("explain", p, env=env)
    assert r.exit_code == 0, r.output
    assert "secret-host" not in r.stdout and "hunter2" not in r.stdout


def test_explain_invalid_exit_1():
    r = run("explain", INVALID / "cycle.yaml")
    assert r.exit_code == 1
    assert "E202" in r.output


def test_schema_check_and_write(tmp_path):
    assert run("schema", "--out", ROOT / "schemas", "--check").exit_code == 0
    r = run("schema", "--out", tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "pipeline.schema.json").read_text() == (ROOT / "schemas" / "pipeline.schema.json").read_text()
    (tmp_path / "pipeline.schema.json").write_text("{}")
    assert run("schema", "--out", tmp_path, "--check").exit_code == 1


def _subprocess(*args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env, **kw)


def test_python_m_etl_validate_never_imports_pyspark():
    r = _subprocess("-X", "importtime", "-m", "etl", "validate", "pipelines")
    assert r.returncode == 0, r.stdout + r.stderr
    imported = [ln.split("|")[-1].strip() for ln in r.stderr.splitlines() if ln.startswith("import time:")]
    assert "etl.check" in imported
    assert not [m for m in imported if m == "pyspark" or m.startswith("pyspark.") or m.startswith("py4j")]


def test_console_script_and_help():
    etl = Path(sys.executable).parent / "etl"
    r = subprocess.run([str(etl), "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for cmd in ("validate", "explain", "run", "test", "schema"):
        assert cmd in r.stdout
    r = subprocess.run([str(etl), "validate", str(INVALID / "cycle.yaml")], capture_output=True, text=True)
    assert r.returncode == 1 and "E202" in r.stdout and "Traceback" not in r.stderr


def test_command_list_shows_each_summary_on_one_line():
    """The command list takes a docstring's first paragraph; its line breaks are the source's, not the screen's."""
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "300", "TERM": "dumb"}).stdout
    for info in app.registered_commands:
        summary = " ".join(info.callback.__doc__.split("\n\n")[0].split())
        assert info.short_help == summary
        assert summary in out, summary
    assert "per query (batches, duration, dead letters, watermark" in out


def test_var_values_are_yaml_scalars(tmp_path):
    from etl.commands import parse_vars

    assert parse_vars(["n=3", "x=1.5", "on=true", "s=hello", "e=", "kv=a=b"]) == {
        "n": 3, "x": 1.5, "on": True, "s": "hello", "e": "", "kv": "a=b"}
    p = write(tmp_path, "v.yaml", """
        name: v
        vars: {rows: 1}
        sources:
          - {id: gen, type: generator, fields: {a: {sequence: 1}}, count: "{{ rows }}"}
        sinks:
          - {id: out, type: print, input: gen}
        """)
    assert run("validate", "--var", "rows=5", p).exit_code == 0
    assert run("validate", "--var", "rows=-5", p).exit_code == 1


def test_run_as_a_script_etl_s_modules_do_not_stand_for_the_standard_library(tmp_path):
    """spark-submit runs etl/__main__.py as a script, which puts etl/ first on sys.path: etl/secrets.py then stood
    for the standard library's `secrets` (the control endpoint's token: AttributeError, every submitted run)."""
    import subprocess
    import sys

    script = ROOT / "etl" / "__main__.py"
    code = ("import runpy, sys\n"
            f"sys.path[0] = {str(script.parent)!r}\n"
            "sys.argv = ['__main__.py', '--version']\n"
            "try:\n"
            f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
            "except SystemExit:\n"
            "    pass\n"
            "import secrets\n"
            "print('token', len(secrets.token_urlsafe(8)) > 0)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.splitlines()[-1] == "token True"
