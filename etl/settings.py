"""etl's settings: one typed, frozen snapshot read once on the driver.

Sources, last wins: the defaults below, the environment (`ETL_*` variables), the command line
(`etl run/explain --set NAME=VALUE`). `current()` reads them on first use and keeps the snapshot;
`configure(overrides)` (the command line) and `reset()` (tests) replace it. An invalid value, or
an unknown name on the command line, is a `SettingsError` with one line naming the variable, what
it expects and what it got (other ETL_* variables of the environment may be a pipeline's own).

Nothing else in etl reads or writes `os.environ` (the templates' `env()` reads
`etl.load.template.process_environ()`). Code that runs on executors gets its values from the
driver's snapshot, shipped with its closure (`use(snapshot)` installs it in a Python worker) or as
fields of the objects it ships (a lookup's TableSource).

The reference's table of settings (docs/reference/settings.md, `etl docs`) is `python -m etl.settings --markdown`.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping

PREFIX = "ETL_"
_OFF = ("off", "0", "false", "no")
_ON = ("on", "1", "true", "yes")
LOG_LEVELS = ("trace", "debug", "info", "warn", "error")
_DEFAULT: Any = object()  # a parser's answer for an empty value: the default stays


class SettingsError(Exception):
    """An unknown ETL_* variable or an invalid value: one line for the user."""


def _number(kind: Callable[[str], Any], lo: float, hi: float | None, what: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text.strip())
        except ValueError:
            raise ValueError(what) from None
        if value < lo or (hi is not None and value > hi) or value != value:
            raise ValueError(what)
        return value
    return parse


def _switch(text: str) -> bool:
    t = text.strip().lower()
    if t == "":
        return _DEFAULT
    if t in _ON:
        return True
    if t in _OFF:
        return False
    raise ValueError("on or off (also 1/0, true/false, yes/no)")


def _auto(text: str) -> bool | None:
    """on, off, or auto (None: the command decides)."""
    t = text.strip().lower()
    if t in ("", "auto"):
        return None
    if t in _ON + _OFF:
        return t in _ON
    raise ValueError("on, off or auto")


def _level(text: str) -> str:
    t = text.strip().lower()
    if t in LOG_LEVELS or t == "":
        return t
    raise ValueError("one of " + ", ".join(LOG_LEVELS))


def _text(text: str) -> Any:
    return text or _DEFAULT


def _names(text: str) -> Any:
    return frozenset(x.strip() for x in text.split(",") if x.strip())


_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _seconds(text: str) -> Any:
    """A duration (`500ms`, `30s`, `5m`, `1h`, `1d`) from 1 s to 3650 d, in seconds."""
    t = text.strip().lower()
    if t == "":
        return _DEFAULT
    unit = next((u for u in ("ms", "s", "m", "h", "d") if t.endswith(u)), None)
    try:
        value = float(t[:-len(unit)]) * _UNITS[unit] if unit else None
    except ValueError:
        value = None
    if value is None or not 1 <= value <= 3650 * 86400:
        raise ValueError("a duration from 1s to 3650d (500ms, 30s, 5m, 1h, 1d)")
    return value


def _cache_dir(text: str) -> str | None:
    return None if text.strip().lower() in _OFF + ("",) else text


@dataclass(frozen=True)
class Setting:
    """One ETL_* variable: the field of `Settings` it sets, its type (as the reference shows it), default,
    description, and the parser of its text (ValueError(what it expects) on a bad value)."""

    name: str
    field: str
    type: str
    default: str
    description: str
    parse: Callable[[str], Any]


SETTINGS: tuple[Setting, ...] = (
    Setting("ETL_LOG_LEVEL", "log_level", "trace|debug|info|warn|error", "(unset)",
            "Spark's log level on the console; set, Spark's lines about failed tasks and the JVM's start-up "
            "warnings are shown instead of going to the run's log file only", _level),
    Setting("ETL_TEMPLATE_TIMEOUT", "template_timeout_s", "seconds (0.1-600)", "2",
            "time one template may take to render", _number(float, 0.1, 600.0, "a number of seconds, 0.1 to 600")),
    Setting("ETL_TEMPLATE_MAX_MB", "template_max_mb", "MB (1-4096)", "64",
            "text one template may render", _number(float, 1.0, 4096.0, "a number of megabytes, 1 to 4096")),
    Setting("ETL_MAX_FILE_MB", "max_file_mb", "MB (0.001-4096)", "32",
            "size of a file etl reads itself (pipeline, rule, Sigma and function module files): a larger one is "
            "refused (E005 at the entry naming it) before a byte is read",
            _number(float, 0.001, 4096.0, "a number of megabytes, 0.001 to 4096")),
    Setting("ETL_MAX_TABLE_MB", "max_table_mb", "MB (0.001-1048576)", "4096",
            "size of a lookup table's files together (a static file source): a larger table is refused (E005 at "
            "its `path`) before a byte is read",
            _number(float, 0.001, 1048576.0, "a number of megabytes, 0.001 to 1048576")),
    Setting("ETL_REGEX_BUDGET_S", "regex_budget_s", "seconds (>= 0)", "1",
            "time a Python re search of a rule pattern may take (plus 1 µs per character) before the row is "
            "undecided; 0 turns the budget off", _number(float, 0.0, None, "a number of seconds >= 0")),
    Setting("ETL_MAX_RECORD_MB", "max_record_mb", "MB (1-1024)", "16",
            "the largest record a source reads (a line, a csv or parquet row, a kafka/rocketmq value) and the largest value a "
            "Python function may return; a bigger one is a dead letter with its first 1,024 bytes and its size",
            _number(int, 1, 1024, "a whole number of megabytes, 1 to 1024")),
    Setting("ETL_FUNCTION_TIMEOUT_S", "function_timeout_s", "seconds (0.1-3600)", "30",
            "time one call of a pipeline's Python function may take (its module's import too); a longer one is the "
            "row's dead letter", _number(float, 0.1, 3600.0, "a number of seconds, 0.1 to 3600")),
    Setting("ETL_STOP_GRACE_S", "stop_grace_s", "seconds (0-3600)", "5",
            "after SIGTERM or Ctrl-C, how long the batch in flight has to finish; past it (a Python function call "
            "that never returns, a slow sink) its jobs are cancelled and it is not committed: the next run "
            "processes it again", _number(float, 0.0, 3600.0, "a number of seconds, 0 to 3600")),
    Setting("ETL_SERVE_POLL_S", "serve_poll_s", "seconds (0.1-3600)", "2",
            "how often `etl serve` looks at its folder for added, changed and removed pipeline files",
            _number(float, 0.1, 3600.0, "a number of seconds, 0.1 to 3600")),
    Setting("ETL_SERVE_TURN_S", "serve_turn_s", "seconds (0.1-3600)", "10",
            "`etl serve` runs at most as many jobs' micro-batches at once as it has task slots, in turns shared by "
            "the jobs' weights: a batch running longer than this no longer holds the others back, and a job idle this "
            "long asks again level with the others",
            _number(float, 0.1, 3600.0, "a number of seconds, 0.1 to 3600")),
    Setting("ETL_FUNCTION_MEMORY_MB", "function_memory_mb", "MB (256-1048576)", "2048",
            "address space a Python worker that runs a pipeline's functions may map (RLIMIT_AS) beyond what it maps "
            "itself (Python, pandas, pyarrow's first arena); a call that needs more is the row's dead letter "
            "(MemoryError)", _number(int, 256, 1048576, "a whole number of megabytes, 256 to 1048576")),
    Setting("ETL_CACHE_DIR", "cache_dir", "folder or off", "$XDG_CACHE_HOME/etl, else ~/.cache/etl",
            "on-disk cache of compiled rule programs, Hyperscan databases and etl's jar; off: no cache (etl's jar, "
            "class archive, Python launcher and log4j2 settings then go to <tmp>/etl-cache-<uid> when it is a private "
            "folder: 0700, this user's, not a symlink; else to a fresh one for the run)", _cache_dir),
    Setting("ETL_LOOKUP_DIR", "lookup_dir", "folder", "<tmp>/etl-lookup-<uid>",
            "where lookup tables are stored (RocksDB); the default is used only when it is a private folder (0700, "
            "this user's, not a symlink: etl.diskcache.private_dir), else a fresh one for the run", _text),
    Setting("ETL_LOOKUP_CHUNK_ROWS", "lookup_chunk_rows", "rows (>= 1)", "4096",
            "rows per chunk of a stored lookup table", _number(int, 1, None, "a whole number >= 1")),
    Setting("ETL_LOOKUP_CACHE_MB", "lookup_cache_mb", "MB (>= 0)", "0",
            "decoded chunks kept per process and table; 0: the whole table (up to ETL_LOOKUP_MAX_CACHE_MB)",
            _number(int, 0, None, "a whole number >= 0")),
    Setting("ETL_LOOKUP_MAX_CACHE_MB", "lookup_max_cache_mb", "MB (>= 1)", "2048",
            "upper bound of the automatic lookup cache size", _number(int, 1, None, "a whole number >= 1")),
    Setting("ETL_EVENT_TIME_HORIZON", "event_time_horizon_s", "duration (1s-3650d)", "1d",
            "how far ahead of the micro-batch's time an event time from a live source (kafka, rocketmq), declared on it or "
            "on a transform, may be; a row "
            "past it is a dead letter ('event time beyond the horizon') and never moves the watermark (file and "
            "generator input: event times from 9990-01-01 on)", _seconds),
    Setting("ETL_MAX_COLUMNS", "max_columns", "columns (>= 1)", "10000",
            "columns a component's rows may have (a source's or a parse's schema, a derive's additions ...): more is "
            "an E102 at validate, where the width comes in (a 50,000-column schema ran the driver out of memory "
            "after 165 s)", _number(int, 1, None, "a whole number >= 1")),
    Setting("ETL_INFER_FILES", "infer_files", "files (>= 1)", "16",
            "files of a jsonl/csv file source without a `schema` that validate (and run) reads to infer its columns "
            "(etl.load.infer; the first ones by name)", _number(int, 1, None, "a whole number >= 1")),
    Setting("ETL_INFER_LINES", "infer_lines", "lines (>= 1)", "1000",
            "lines of each of those files read to infer the columns", _number(int, 1, None, "a whole number >= 1")),
    Setting("ETL_INFER_KB", "infer_kb", "KB (>= 1)", "1024",
            "bytes of each of those files read to infer the columns (a line cut at the bound is left out)",
            _number(int, 1, None, "a whole number >= 1")),
    Setting("ETL_PREFILTER", "prefilter", "on|off", "on", "the JVM's literal prefilter of rule filters", _switch),
    Setting("ETL_RULES_JVM", "rules_jvm", "on|off", "on", "rule sets run in the JVM when they can", _switch),
    Setting("ETL_LOOKUP_JVM", "lookup_jvm", "on|off", "on", "lookups run in the JVM when they can", _switch),
    Setting("ETL_GROK_PROGRAM", "grok_program", "on|off", "on",
            "grok patterns run as a compiled program (etl/grokvm) in the JVM; off: java.util.regex alone", _switch),
    Setting("ETL_GUARD_OPTIMISTIC", "guard_optimistic", "on|off", "on",
            "micro-batches run unguarded and are retried guarded when one fails on a row; off: guard every "
            "expression always", _switch),
    Setting("ETL_COMPONENT_COUNTS", "component_counts", "on|off", "off",
            "rows out of every transform counted per micro-batch (DataFrame.observe: one accumulator each) for "
            "`etl top` and the metrics; off: sources and sinks only (on costs about 12% CPU on bench/window.py: "
            "each count is a barrier to whole-stage code generation)", _switch),
    Setting("ETL_JVM_PRETOUCH", "jvm_pretouch", "on|off", "on",
            "a local session's heap (spark.driver.memory) is committed and touched when the JVM starts (fewer page "
            "faults in the micro-batches: etl.runtime.session.heap_options); off: the heap grows as needed, a "
            "smaller resident set and a faster start (the test suite sets it: hundreds of short-lived JVMs)", _switch),
    Setting("ETL_JVM_QUICK_JIT", "jvm_quick_jit", "on|off|auto", "auto",
            "the JVMs etl starts (the driver; a cluster's executors) compile hot code with their quick compiler only "
            "(-XX:TieredStopAtLevel=1, with the 240 MB code cache of both compilers): a short run takes about 40% less "
            "CPU, a long one is slower; auto: on for "
            "`etl test`, off for `etl run` (the test suite sets on: hundreds of short runs)", _auto),
    Setting("ETL_JVM_CLASS_ARCHIVE", "jvm_class_archive", "on|off", "on",
            "the driver JVM maps a class-data archive of Spark's and etl's classes (the JDK's CDS) from the cache "
            "folder, written by the first JVM that exits without one: a JVM start takes about half the CPU "
            "(etl.runtime.class_archive)", _switch),
    Setting("ETL_JAVA_LIB", "java_lib", "folder", "java/lib of the checkout",
            "the Java artifacts scripts/setup-java.sh fills (connector jars under spark/)", _text),
    Setting("ETL_IVY_DIR", "ivy_dir", "folder", "ivy/ in the cache folder",
            "where Spark's Ivy keeps the connector jars `etl run` fetches from Maven Central (spark.jars.packages) "
            "when ETL_JAVA_LIB has none: fetched once, then used offline", _text),
    Setting("ETL_ROCKETMQ_LOG_DIR", "rocketmq_log_dir", "folder", "(the client's own)",
            "log folder of the RocketMQ C++ client", _text),
    Setting("ETL_NO_SPARK", "no_spark", "on|off", "off",
            "starting a Spark session fails instead (`make test-fast` sets it: the fast suite starts no JVM)",
            _switch),
    Setting("ETL_FORCE_ENGINES", "force_engines", "engine names, comma-separated", "(none)",
            "engines the physical planner takes first wherever they can run (e.g. rules-python,state; "
            "`etl explain` names them)", _names),
    Setting("ETL_TEST_PARTITION_PAUSE", "test_partition_pause", "folder", "(unset)",
            "tests: partition 0's first write attempt says where it runs in this folder and waits 60 s after its "
            "commit (a test kills its executor then)", _text),
    Setting("ETL_TEST_WORKER_CRASH", "test_worker_crash", "text", "(unset)",
            "tests: a Python worker raises this message in every batch (a bug's path)", _text),
)
_BY_NAME = {s.name: s for s in SETTINGS}


@dataclass(frozen=True)
class Settings:
    """The snapshot (picklable: closures ship it to executors)."""

    log_level: str = ""
    template_timeout_s: float = 2.0
    template_max_mb: float = 64.0
    max_file_mb: float = 32.0
    max_table_mb: float = 4096.0
    regex_budget_s: float = 1.0
    max_record_mb: int = 16
    function_timeout_s: float = 30.0
    function_memory_mb: int = 2048
    stop_grace_s: float = 5.0
    serve_poll_s: float = 2.0
    serve_turn_s: float = 10.0
    cache_dir: str | None = None
    lookup_dir: str = ""  # "": the private <tmp>/etl-lookup-<uid> (etl.compile.lookups.store.default_base_dir)
    lookup_chunk_rows: int = 4096
    lookup_cache_mb: int = 0
    lookup_max_cache_mb: int = 2048
    event_time_horizon_s: float = 86400.0
    max_columns: int = 10_000
    infer_files: int = 16
    infer_lines: int = 1000
    infer_kb: int = 1024
    prefilter: bool = True
    rules_jvm: bool = True
    lookup_jvm: bool = True
    grok_program: bool = True
    guard_optimistic: bool = True
    component_counts: bool = False  # off by default, as the table says: on costs about 12% CPU
    jvm_pretouch: bool = True
    jvm_quick_jit: bool | None = None  # None: auto
    jvm_class_archive: bool = True
    java_lib: str = ""
    ivy_dir: str = ""  # "": <cache folder>/ivy (etl.runtime.session.ivy_dir)
    rocketmq_log_dir: str | None = None
    no_spark: bool = False
    force_engines: frozenset[str] = frozenset()
    test_partition_pause: str | None = None
    test_worker_crash: str | None = None
    spark_submit: bool = False  # started by spark-submit (PYSPARK_GATEWAY_PORT set)
    java_home: str = ""  # JAVA_HOME: the JDK spark-submit starts (else the PATH's java)


def _defaults(environ: Mapping[str, str]) -> dict[str, Any]:
    xdg = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return {"cache_dir": os.path.join(xdg, "etl"),
            "java_lib": str(Path(__file__).resolve().parents[1] / "java" / "lib"),
            "spark_submit": "PYSPARK_GATEWAY_PORT" in environ,
            "java_home": environ.get("JAVA_HOME", "")}


def load(environ: Mapping[str, str] | None = None, overrides: Mapping[str, str] | None = None) -> Settings:
    """A snapshot from `environ` (default: this process's environment) and `overrides` (NAME=VALUE of the
    command line, which win); SettingsError on an unknown ETL_* name or an invalid value."""
    environ = os.environ if environ is None else environ
    values = _defaults(environ)
    given = [(k, v, "") for k, v in environ.items() if k.startswith(PREFIX)]
    given += [(k, v, "--set ") for k, v in (overrides or {}).items()]
    for name, text, where in given:
        setting = _BY_NAME.get(name)
        if setting is None:
            if not where:  # other ETL_* variables may be a pipeline's own (its templates' env())
                continue
            near = difflib.get_close_matches(name, _BY_NAME, 1)
            hint = f"did you mean {near[0]}?" if near else "`python -m etl.settings --markdown` lists them"
            raise SettingsError(f"{where}{name}: unknown setting ({hint})")
        try:
            value = setting.parse(text)
        except ValueError as e:
            raise SettingsError(f"{where}{name}: expected {e}, got {text!r}") from None
        if value is not _DEFAULT:
            values[setting.field] = value
    return Settings(**values)


_CURRENT: Settings | None = None


def current() -> Settings:
    """The snapshot: read from the environment on first use (driver), or the one `use()` installed."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = load()
    return _CURRENT


def configure(overrides: Mapping[str, str]) -> Settings:
    """The command line's NAME=VALUE settings on top of the environment's (read again, once)."""
    global _CURRENT
    _CURRENT = load(overrides=overrides)
    return _CURRENT


def use(snapshot: Settings) -> None:
    """Install the driver's snapshot in this process (a Python worker: called from a shipped closure)."""
    global _CURRENT
    _CURRENT = snapshot


def reset() -> None:
    """Forget the snapshot: the next `current()` reads the environment again (tests that change it)."""
    global _CURRENT
    _CURRENT = None


def switched_on(name: str) -> bool:
    """The on/off setting `name` (ETL_PREFILTER, ETL_RULES_JVM, ...) of the snapshot."""
    return bool(getattr(current(), _BY_NAME[name].field))


def parse_assignments(items: list[str] | None) -> dict[str, str]:
    """`--set NAME=VALUE` items; SettingsError on one without '='."""
    out: dict[str, str] = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise SettingsError(f"--set {item}: expected NAME=VALUE (e.g. ETL_RULES_JVM=off)")
        out[name.strip()] = value
    return out


def export_for_spark(pyspark_python: Callable[[], str]) -> None:
    """The variables Spark reads from the environment: the Python of its workers (`pyspark_python()` unless
    the user set PYSPARK_PYTHON), of the driver, and no host-name lookups."""
    if "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = pyspark_python()
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def markdown() -> str:
    """The reference's table of settings (docs/reference/settings.md)."""
    lines = ["| variable | type | default | what it sets |", "| --- | --- | --- | --- |"]
    for s in SETTINGS:
        cells = [f"`{s.name}`", s.type.replace("|", "\\|"), s.default.replace("<", "&lt;"),
                 s.description.replace("|", "\\|").replace("<", "&lt;")]  # `<tmp>` is no HTML tag
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    try:
        snap = load()
    except SettingsError as e:
        print(f"etl: {e}", file=sys.stderr)
        return 2
    for f in dataclasses.fields(snap):
        print(f"{f.name} = {getattr(snap, f.name)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
