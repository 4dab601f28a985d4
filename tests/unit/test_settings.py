"""etl.settings: defaults, parsing, one-line errors, --set, the README's table, and who reads the environment."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from etl import settings
from etl.settings import Settings, SettingsError, load

ROOT = Path(__file__).resolve().parents[2]


def test_defaults():
    got = load({"HOME": "/h"})
    assert got == Settings(cache_dir=os.path.join(os.path.expanduser("~"), ".cache", "etl"),
                           java_lib=str(ROOT / "java" / "lib"))
    assert (got.log_level, got.template_timeout_s, got.template_max_mb, got.regex_budget_s) == ("", 2.0, 64.0, 1.0)
    assert (got.lookup_chunk_rows, got.lookup_cache_mb, got.lookup_max_cache_mb) == (4096, 0, 2048)
    assert (got.prefilter, got.rules_jvm, got.lookup_jvm, got.grok_program, got.guard_optimistic) == (True,) * 5
    assert load({"XDG_CACHE_HOME": "/x"}).cache_dir == "/x/etl"
    assert load({"PYSPARK_GATEWAY_PORT": "1"}).spark_submit is True


def test_values_from_the_environment_and_the_command_line():
    env = {"ETL_RULES_JVM": "off", "ETL_PREFILTER": "No", "ETL_LOOKUP_JVM": "on", "ETL_REGEX_BUDGET_S": "0",
           "ETL_TEMPLATE_TIMEOUT": "0.3", "ETL_LOOKUP_CHUNK_ROWS": "128", "ETL_LOG_LEVEL": " INFO ",
           "ETL_CACHE_DIR": "off", "ETL_LOOKUP_DIR": "/l", "ETL_ROCKETMQ_LOG_DIR": "/r", "ETL_JAVA_LIB": "/j"}
    got = load(env, {"ETL_RULES_JVM": "on", "ETL_GROK_PROGRAM": "0"})
    assert (got.rules_jvm, got.prefilter, got.lookup_jvm, got.grok_program) == (True, False, True, False)
    assert (got.regex_budget_s, got.template_timeout_s, got.lookup_chunk_rows) == (0.0, 0.3, 128)
    assert (got.log_level, got.cache_dir, got.lookup_dir, got.rocketmq_log_dir, got.java_lib) == (
        "info", None, "/l", "/r", "/j")
    assert load({"ETL_CACHE_DIR": "/c", "ETL_LOOKUP_DIR": ""}).cache_dir == "/c"
    assert load({"ETL_LOOKUP_DIR": ""}).lookup_dir == load({}).lookup_dir  # empty: the default
    assert load({"ETL_SOMETHING_OF_A_PIPELINE": "x"}) == load({})  # a template's env() may read it


@pytest.mark.parametrize("env,message", [
    ({"ETL_PREFILTER": "maybe"}, "ETL_PREFILTER: expected on or off (also 1/0, true/false, yes/no), got 'maybe'"),
    ({"ETL_REGEX_BUDGET_S": "1s"}, "ETL_REGEX_BUDGET_S: expected a number of seconds >= 0, got '1s'"),
    ({"ETL_REGEX_BUDGET_S": "-1"}, "ETL_REGEX_BUDGET_S: expected a number of seconds >= 0, got '-1'"),
    ({"ETL_REGEX_BUDGET_S": "nan"}, "ETL_REGEX_BUDGET_S: expected a number of seconds >= 0, got 'nan'"),
    ({"ETL_TEMPLATE_TIMEOUT": "900"}, "ETL_TEMPLATE_TIMEOUT: expected a number of seconds, 0.1 to 600, got '900'"),
    ({"ETL_TEMPLATE_MAX_MB": "0.5"}, "ETL_TEMPLATE_MAX_MB: expected a number of megabytes, 1 to 4096, got '0.5'"),
    ({"ETL_LOOKUP_CHUNK_ROWS": "1.5"}, "ETL_LOOKUP_CHUNK_ROWS: expected a whole number >= 1, got '1.5'"),
    ({"ETL_LOOKUP_CACHE_MB": "-2"}, "ETL_LOOKUP_CACHE_MB: expected a whole number >= 0, got '-2'"),
    ({"ETL_LOG_LEVEL": "verbose"}, "ETL_LOG_LEVEL: expected one of trace, debug, info, warn, error, got 'verbose'"),
])
def test_an_invalid_value_is_one_line(env, message):
    with pytest.raises(SettingsError) as e:
        load(env)
    assert str(e.value) == message


def test_the_command_line_names_known_settings_only():
    with pytest.raises(SettingsError) as e:
        load({}, {"ETL_RULE_JVM": "off"})
    assert str(e.value) == "--set ETL_RULE_JVM: unknown setting (did you mean ETL_RULES_JVM?)"
    with pytest.raises(SettingsError) as e:
        load({}, {"NOPE": "1"})
    assert str(e.value) == "--set NOPE: unknown setting (`python -m etl.settings --markdown` lists them)"
    with pytest.raises(SettingsError) as e:
        load({}, {"ETL_PREFILTER": "x"})
    assert str(e.value) == "--set ETL_PREFILTER: expected on or off (also 1/0, true/false, yes/no), got 'x'"
    assert settings.parse_assignments(["ETL_RULES_JVM=off", " ETL_LOG_LEVEL =a=b"]) == {
        "ETL_RULES_JVM": "off", "ETL_LOG_LEVEL": "a=b"}
    with pytest.raises(SettingsError) as e:
        settings.parse_assignments(["ETL_RULES_JVM"])
    assert str(e.value) == "--set ETL_RULES_JVM: expected NAME=VALUE (e.g. ETL_RULES_JVM=off)"


def test_read_once_then_installed_or_configured(monkeypatch):
    monkeypatch.setenv("ETL_REGEX_BUDGET_S", "0.5")
    from etl.matching.regex_budget import budget_s

    assert budget_s() == 0.5
    monkeypatch.setenv("ETL_REGEX_BUDGET_S", "3")
    assert budget_s() == 0.5  # read once
    driver = settings.configure({"ETL_RULES_JVM": "off"})
    assert (driver.regex_budget_s, driver.rules_jvm, budget_s()) == (3.0, False, 3.0)
    settings.use(pickle.loads(pickle.dumps(Settings(regex_budget_s=0.25))))  # a worker, with the driver's
    assert budget_s() == 0.25
    from etl.compile.jvm import switched_off

    assert switched_off("ETL_RULES_JVM") is False  # the installed snapshot's default


def test_a_lookup_table_carries_the_drivers_values(monkeypatch):
    from etl.compile.lookups import store as ls

    monkeypatch.setenv("ETL_LOOKUP_CHUNK_ROWS", "7")
    monkeypatch.setenv("ETL_LOOKUP_CACHE_MB", "40")
    monkeypatch.setenv("ETL_LOOKUP_MAX_CACHE_MB", "100")
    monkeypatch.setenv("ETL_LOOKUP_DIR", "/lk")
    src = ls.TableSource("t", "/t.csv", "csv", ("id",), ("v",))
    settings.use(Settings())  # an executor: other values
    shipped = pickle.loads(pickle.dumps(src))
    assert (shipped.chunk_rows, shipped.cache_mb, shipped.max_cache_mb, shipped.base_dir) == (7, 40, 100, "/lk")
    assert ls.cache_size_mb(0, {"raw_mb": 1000}, shipped.max_cache_mb) == 100


def test_the_cli_stops_on_an_invalid_setting_with_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ETL_PREFILTER": "maybe"}
    p = subprocess.run([sys.executable, "-m", "etl", "validate", str(ROOT / "pipelines" / "quickstart.yaml")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (
        2, "", "etl: ETL_PREFILTER: expected on or off (also 1/0, true/false, yes/no), got 'maybe'\n")
    env.pop("ETL_PREFILTER")
    p = subprocess.run([sys.executable, "-m", "etl", "explain", str(ROOT / "pipelines" / "quickstart.yaml"),
                        "--set", "ETL_PREFILTR=off"], env=env, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (
        2, "", "etl: --set ETL_PREFILTR: unknown setting (did you mean ETL_PREFILTER?)\n")


def test_the_readme_table_is_current():
    page = (ROOT / "docs" / "reference" / "settings.md").read_text()
    assert page.endswith("\n\n" + settings.markdown()), "docs/reference/settings.md is stale: run `etl docs`"
    p = subprocess.run([sys.executable, "-m", "etl.settings", "--markdown"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert p.stdout == settings.markdown()
    assert [ln.split("`")[1] for ln in settings.markdown().splitlines()[2:]] == [s.name for s in settings.SETTINGS]


def test_the_table_s_defaults_are_the_defaults():
    """Each default the table names, read by its setting's own parser, is what a run without the variable gets
    (ETL_COMPONENT_COUNTS' said off while etl counted); the others are named here with the value they stand for."""
    got = load({"HOME": "/h", "XDG_CACHE_HOME": "/x"})
    descriptive = {"ETL_LOG_LEVEL": "", "ETL_CACHE_DIR": "/x/etl",
                   "ETL_LOOKUP_DIR": "",  # "": the private <tmp>/etl-lookup-<uid>, made where it is used
                   "ETL_IVY_DIR": "",  # "": <cache folder>/ivy (etl.runtime.packages.ivy_dir)
                   "ETL_JAVA_LIB": str(ROOT / "java" / "lib"), "ETL_ROCKETMQ_LOG_DIR": None,
                   "ETL_FORCE_ENGINES": frozenset(), "ETL_TEST_PARTITION_PAUSE": None, "ETL_TEST_WORKER_CRASH": None}
    for s in settings.SETTINGS:
        want = descriptive[s.name] if s.name in descriptive else s.parse(s.default)
        have = getattr(got, s.field)
        assert have == want, f"{s.name}: the table says {s.default!r}, a run has {have!r}"
    assert got.component_counts is False


def test_every_etl_variable_etl_reads_is_a_setting():
    """No module of etl reads the environment except etl/settings.py (and the templates' env() source); every
    ETL_* name etl's code mentions is a setting (or the worker pool's, which Spark sets)."""
    readers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "etl").rglob("*.py")
                     if re.search(r"os\.environ|getenv\(", p.read_text()))
    assert readers == ["etl/load/template.py", "etl/settings.py"]
    names = {m for p in (ROOT / "etl").rglob("*.py") for m in re.findall(r"\bETL_[A-Z_]+[A-Z]\b", p.read_text())}
    assert names - {s.name for s in settings.SETTINGS} == {"ETL_WORKER_POOL"}


def test_declared_package_data_exists():
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, patterns in data.items():
        for pattern in patterns:
            assert list((ROOT / package.replace(".", "/")).glob(pattern)), f"{package}: {pattern} matches nothing"
