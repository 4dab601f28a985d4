"""The SparkSession: local[*] by default, --master / --conf / spark-submit honoured.

Defaults set here (each one can be overridden with --conf):
RocksDB state store with changelog checkpointing, UTC session time zone, quiet
log4j (WARN, ERROR for chatty loggers), few shuffle partitions on local masters,
Python workers reached over Unix domain sockets.
The connector jars of java/lib/spark (Spark's Kafka connector, MariaDB JDBC;
filled by scripts/setup-java.sh) go on `spark.jars` whenever they are present;
else the pipeline's `packages` are fetched by Ivy (etl.runtime.packages);
etl's own jar (etl/compile/jvm.py) goes on the driver's class path.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import socket
import sys
from pathlib import Path
from typing import Any
from collections.abc import Mapping, Sequence

from etl import settings
from etl.compile import jvm
from etl.diskcache import cache_root, private_tmp, write_atomically
from etl.runtime import class_archive
from etl.runtime.packages import check_launch, launch_conf as packages_conf
from etl.runtime.pylauncher import worker_python
from etl.settings import export_for_spark

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

# SQL (runtime) settings: applied to every session unless given explicitly.
SQL_DEFAULTS: dict[str, str] = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",  # kv parsing: a repeated key keeps the last value
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # rule filters cross to Python in Arrow batches: 100k rows instead of 10k cut the fixed cost per batch
    # (window bench: 10.4 -> 8.7 CPU-s per 1M events); the byte cap keeps wide rows' batches bounded
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.execution.arrow.maxBytesPerBatch": str(64 << 20),
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    # a frame etl persists lives for one micro-batch (a source read by a stage and by its dead letters, a shared
    # filter pass): compressing its columns first gathers every string value into a hash set for dictionary
    # encoding, which log lines (all distinct) never get. Off: bench/grok.py's grok and dissect runs (their text
    # source is persisted: the stage and the source's dead letters read it) took 2.21 -> 1.91 and 2.10 -> 1.46
    # CPU-s per 200,000 lines (medians of 5, taking turns in one session)
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
}
# Settings that only apply when this process starts the JVM.
LAUNCH_DEFAULTS: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "2g",
    # PySpark 4 records the Python call site of every Column and DataFrame call in the JVM (for its error
    # messages): 4-5 py4j round trips each, read by no one here (etl reports errors at pipeline positions).
    # Off, the driver's work per micro-batch and per compile takes a fraction of the round trips (bench/sinks.py).
    # A static setting: under spark-submit (a JVM already running) it stays as submitted.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
if hasattr(socket, "AF_UNIX"):
    # JVM <-> Python workers over Unix domain sockets instead of TCP on localhost: every task that runs Python
    # (rule filters, lookups, the generator and RocketMQ sources) starts about 25 ms sooner (16 tasks of a
    # trivial Arrow UDF over no rows: 0.56 s -> 0.18 s of overhead)
    LAUNCH_DEFAULTS["spark.python.unix.domain.socket.enabled"] = "true"
THREAD_STACK = "-Xss8m"
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",  # recorded in the checkpoint of stateful queries
    "spark.default.parallelism": "4",
}

# `etl run --profile light`: the whole process tree (JVM, driver, Python workers) within 1 core and 1 GB of
# resident memory (bench/light.py measures it). One task slot; a 512 MB heap (Spark wants 450 MB at least) that is neither sized up front nor
# pre-touched (the JVM grows it as needed) with the serial collector (no G1 remembered sets, no GC threads);
# capped metaspace, code cache and direct buffers; one shuffle partition (one RocksDB instance per stateful
# operator) with the state stores' memory bounded; no web UI and short UI histories (the status store lives on
# the heap); Python workers reused; Arrow batches of 20k rows to the rule filters' workers. --master and --conf
# still win over each of them.
PROFILES: dict[str, dict[str, str]] = {
    "light": {
        "spark.master": "local[1]",
        "spark.driver.memory": "512m",
        "spark.sql.shuffle.partitions": "1",
        "spark.default.parallelism": "1",
        "spark.memory.offHeap.enabled": "false",
        "spark.python.worker.reuse": "true",
        "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
        "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "64",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
        "spark.ui.enabled": "false",
        "spark.ui.retainedJobs": "50",
        "spark.ui.retainedStages": "50",
        "spark.sql.ui.retainedExecutions": "20",
        "spark.sql.streaming.numRecentProgressUpdates": "20",
    },
}
PROFILE_JAVA: dict[str, str] = {
    "light": "-XX:+UseSerialGC -XX:MaxMetaspaceSize=256m -XX:ReservedCodeCacheSize=96m "
             "-XX:MaxDirectMemorySize=128m -XX:CICompilerCount=2",
}


def run_master(master: str | None, profile: str | None, trigger_mode: str, micro_batches: bool) -> str | None:
    """The master `etl run` asks for: the user's, else a profile's (None here), else realtime_master() for a run in
    Spark's real-time mode (not under spark-submit, nor when --once/--drain run it in micro-batches), else None
    (local[*])."""
    if master is None and profile is None and trigger_mode == "realtime" and not micro_batches \
            and not under_spark_submit():
        return realtime_master()
    return master


def realtime_master() -> str:
    """The local master of a run in Spark's real-time mode when none is given: twice the cores' task slots
    (local[*] has one per core). A real-time batch holds a slot per task for its whole length (its tasks wait for
    records), so on local[*] the dead-letter query's micro-batch waited for the batch's end (up to `interval`) and
    then delayed the next one: bench/kafka.py at 5k and 20k ev/s on 2 cores, etl real-time p99 1,503 and 1,597 ms
    on local[2], 619 and 649 on local[4], plain Spark's real-time job 467-1,154 ms beside it."""
    return f"local[{2 * (os.cpu_count() or 1)}]"


def profile_conf(profile: str | None, master: str | None, conf: Mapping[str, str]) -> tuple[str | None, dict[str, str]]:
    """The master and settings of a profile under the user's --master and --conf (which win)."""
    if not profile:
        return master, dict(conf)
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (known: {', '.join(sorted(PROFILES))})")
    settings = dict(PROFILES[profile])
    default_master = settings.pop("spark.master")
    merged = {**settings, **conf}
    java = PROFILE_JAVA.get(profile, "")
    merged["spark.driver.extraJavaOptions"] = f"{java} {conf.get('spark.driver.extraJavaOptions', '')}".strip()
    return master or default_master, merged


LOG4J = """\
shutdownHook = disable
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = warn
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.shutdown.name = org.apache.hadoop.util.ShutdownHookManager
logger.shutdown.level = error
logger.fsck.name = org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor
logger.fsck.level = error
logger.behind.name = org.apache.spark.sql.execution.streaming.ProcessingTimeExecutor
logger.behind.level = error
logger.blockmgr.name = org.apache.spark.storage.BlockManager
logger.blockmgr.level = error
logger.rocks.name = org.apache.spark.sql.execution.streaming.state
logger.rocks.level = error
logger.py.name = org.apache.spark.api.python
logger.py.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = warn
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.sparkenv.name = org.apache.spark.SparkEnv
logger.sparkenv.level = error
logger.checkpoint.name = org.apache.spark.sql.execution.streaming.checkpointing
logger.checkpoint.level = error
logger.resolve.name = org.apache.spark.sql.execution.streaming.ResolveWriteToStream
logger.resolve.level = error
logger.resolve2.name = org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream
logger.resolve2.level = error
logger.pyds.name = org.apache.spark.sql.execution.datasources.v2.python
logger.pyds.level = error
"""


def prepare_environment(local: bool = False) -> None:
    """Python workers use this interpreter (on a local master through etl/runtime/pylauncher.py, which keeps
    Spark's uncompiled copy of pyspark off their path); no host-name lookups. A PYSPARK_PYTHON set by the
    user stays as it is."""
    export_for_spark(worker_python if local else lambda: sys.executable)


# Spark's lines about a failed task or query: etl reports the failure in one line (etl/runtime/failure.py), so
# they go to the run's log file only (nowhere without one); ETL_LOG_LEVEL=info (or debug, ...) shows them.
QUIET_LOGGERS = {
    "mbe": "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
    "mbe2": "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
    "pyfb": "org.apache.spark.sql.execution.streaming.sources",
    "executor": "org.apache.spark.executor.Executor",
    "tasks": "org.apache.spark.scheduler.TaskSetManager",
    "runner": "org.apache.spark.api.python.PythonRunner",
}
RUN_LOG = """\
appender.runlog.type = File
appender.runlog.name = runlog
appender.runlog.fileName = ${{sys:etl.runlog}}
appender.runlog.createOnDemand = true
appender.runlog.append = true
appender.runlog.layout.type = PatternLayout
appender.runlog.layout.pattern = %d{{ISO8601}} %p %c: %m%n%ex
rootLogger.appenderRef.runlog.ref = runlog
"""


def log4j_text(log_file: str | None = None) -> str:
    """log4j2 settings: WARN and up on the console, and (with `log_file`) in the run's log file too."""
    level = settings.current().log_level
    text = LOG4J
    if log_file:
        text += RUN_LOG.format()  # the path: a system property of the JVM (-Detl.runlog), not in this text
    if level in ("trace", "debug", "info", "warn", "error"):
        return text.replace("level = warn", f"level = {level}")
    for key, name in QUIET_LOGGERS.items():
        text += f"logger.{key}.name = {name}\nlogger.{key}.additivity = false\n"
        text += f"logger.{key}.appenderRef.runlog.ref = runlog\n" if log_file else f"logger.{key}.level = off\n"
    return text


def _log4j_file(log_file: str | None = None) -> str:
    """The log4j2 settings as a file the JVM reads: named by a SHA-256 of their text in etl's private cache folder
    (etl.diskcache.cache_root: never a folder or file another user planted), written atomically once; a run with
    the same settings reuses it (no new file per run)."""
    text = log4j_text(log_file)
    path = cache_root() / "log4j2" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.properties"
    try:
        if path.read_text() == text:
            return str(path)
    except OSError:
        pass
    write_atomically(path, text.encode())
    return str(path)


def connector_jars() -> list[str]:
    """Jars of java/lib/spark (ETL_JAVA_LIB overrides java/lib): Kafka connector + deps, MariaDB JDBC."""
    lib = Path(settings.current().java_lib) / "spark"
    return sorted(str(p) for p in lib.glob("*.jar")) if lib.is_dir() else []


class SparkForbidden(ValueError):
    """build_session under ETL_NO_SPARK=on (`make test-fast`: a test that starts Spark must be marked so)."""


class MissingConnector(RuntimeError):
    """A connector's Java classes are not on the Spark classpath."""


def require_class(spark: Any, class_name: str, what: str) -> None:
    """Raise MissingConnector (naming scripts/setup-java.sh) unless `class_name` loads in Spark's JVM."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(class_name, False, loader)
        return
    except Exception as e:  # noqa: BLE001 - py4j raises Py4JJavaError / Py4JError
        if "ClassNotFoundException" not in str(e) and "NoClassDefFoundError" not in str(e):
            raise
    raise MissingConnector(
        f"{what} needs Java classes that are not on Spark's classpath ({class_name}): run scripts/setup-java.sh "
        "(it fills java/lib/spark, which `etl run` puts on spark.jars), or pass --conf spark.jars=... / "
        "spark-submit --jars")


def task_slots(spark: Any) -> int:
    """How many tasks the session runs at once now (its executors' cores over spark.task.cpus; local[N]: N), as
    Spark's scheduler counts them; at least 1 (a cluster before its first executor registered)."""
    from py4j.protocol import Py4JError

    sc = spark.sparkContext._jsc.sc()
    try:
        return max(1, int(sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile())))
    except Py4JError:  # the JVM is going away (a sync while the set stops): one
        return 1


def under_spark_submit() -> bool:
    """True when spark-submit (or another launcher) already started the JVM for us."""
    return settings.current().spark_submit


def end_jvm(timeout_s: float) -> bool:
    """Stop the session's JVM this process launched and wait for it to exit (at most `timeout_s`): what it writes
    until then (its shutdown hooks' log lines) still reaches the run's log (etl.runtime.runlog drains its FIFO to
    the end). True when it has exited; False when there is none of ours (spark-submit's JVM, none started) or it
    did not exit in time. The next session starts a new JVM."""
    import subprocess

    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return False
    gateway.shutdown()  # py4j's connections and callback server
    SparkContext._gateway = SparkContext._jvm = None  # type: ignore[assignment]
    if proc.stdin is not None:
        proc.stdin.close()  # the JVM's end of file: Spark's PythonGatewayServer exits (its shutdown hooks first)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def parse_conf(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {item!r}")
        out[key.strip()] = value
    return out


def heap_options(memory: str, pretouch: bool = True) -> str:
    """JVM options for a local session's heap (the driver is the executor): all of it committed and touched at
    start. A JVM otherwise grows its heap while the first micro-batches run, and every page it touches for the
    first time is a page fault that the kernel zeroes: measured on bench/lookup.py (1M events after a warm-up of
    50k), 249k page faults and 3.5 s of system CPU in the JVM during the run, against 46k and 0.3 s with these
    options -- the run itself 1.5x faster. Costs: the session starts about 0.7 s later (2 GB), and the heap is
    resident from the start. Long-running JVMs often do the same (Elasticsearch ships with AlwaysPreTouch).
    The heap also asks for transparent huge pages (where the kernel grants them on request, `madvise`): a random
    read of a large heap then misses the TLB far less. Measured side by side: a 10M-row JVM lookup table answers in
    360 ns instead of 505 ns per key; bench/filter.py's scan of 1M JSON events takes 1.02 s instead of 1.18 s.
    A user's `-XX:-AlwaysPreTouch` (or `-XX:-UseTransparentHugePages`) in spark.driver.extraJavaOptions comes later
    and wins."""
    size = memory.strip().lower()
    if size[-2:] in ("kb", "mb", "gb", "tb"):  # Spark's spelling; the JVM's has no "b"
        size = size[:-1]
    if size.isdigit():  # Spark reads a bare driver memory in MiB
        size += "m"
    if not pretouch:  # light profile: the heap grows as needed (resident memory is what it uses)
        return ""
    return f"-Xms{size} -XX:+AlwaysPreTouch" + (" -XX:+UseTransparentHugePages" if huge_pages() else "")


def local_heap(memory: str, profile: str | None) -> str:
    """The heap options of a local session: touched at start unless a profile (light) or ETL_JVM_PRETOUCH=off
    says otherwise."""
    return heap_options(memory, not profile and settings.current().jvm_pretouch)


QUICK_CODE_CACHE = "-XX:ReservedCodeCacheSize=240m"


def jit_options(short: bool = False) -> str:
    """ETL_JVM_QUICK_JIT: the JVM's quick compiler (C1) only; auto: for a `short` session (`etl test`). Most of a
    short run's CPU is the JIT compiling Spark's start-up code with its optimizing compiler: `etl run
    pipelines/quickstart.yaml --once` (a JVM start, 400 rows, two micro-batches) measured 20.6 CPU-s with both
    compilers against 12.8 with C1 only (wall 12.4 s against 9.6 s, medians of 3 alternating runs); `etl test`
    of the window and join examples 30.7 against 18.5 CPU-s (medians of 2). A long run loses C2's faster code.
    The code cache keeps the size it has with both compilers (240 MB): with C1 only the JVM reserves 48 MB, which
    Spark's classes and its generated code fill within a minute (`jcmd <pid> Compiler.codecache`: max_used 47.4
    of 48 MB); the JVM then flushes compiled methods and compiles them again, its sweeper thread busy all along.
    Measured on tests/sql/test_sql_spark.py and tests/spark/test_examples.py in one process (machine CPU, two
    alternating runs each): 106.5 and 102.9 CPU-s with 48 MB, 93.7 and 91.3 with 240 MB."""
    quick = settings.current().jvm_quick_jit
    return f" -XX:TieredStopAtLevel=1 {QUICK_CODE_CACHE}" if (short if quick is None else quick) else ""


def huge_pages(setting: str = "/sys/kernel/mm/transparent_hugepage/enabled") -> bool:
    """The kernel hands out transparent huge pages to a process that asks (else the JVM would warn at start)."""
    try:
        with open(setting) as fh:
            mode = fh.read()
    except OSError:
        return False
    return "[madvise]" in mode or "[always]" in mode


def _launch_conf(conf: dict[str, str], local: bool, ui: bool, log_file: str | None, profile: str | None,
                 short: bool, packages: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The settings etl launches a new Spark with (besides SQL_DEFAULTS and the user's `conf`, from which it takes
    the JVM options, class path and jars it merges), and the Ivy settings of the jars this process fetches."""
    launch = dict(LAUNCH_DEFAULTS)
    # Spark SQL's warehouse (managed tables: etl keeps none) is made when the catalog is first used, by default
    # as spark-warehouse/ in the current folder: this user's private temporary folder instead (the driver's)
    launch["spark.sql.warehouse.dir"] = private_tmp("etl-warehouse").as_uri()
    if local:
        launch.update(LOCAL_DEFAULTS)
    if not ui:
        launch["spark.ui.enabled"] = "false"
    log4j = f"-Dlog4j2.configurationFile=file:{_log4j_file(log_file)}"
    if log_file:
        log4j += f" -Detl.runlog={shlex.quote(log_file)}"
    # -Xss: java.util.regex recurses per repetition of a group; 1 MB thread stacks overflow on long values.
    # Options the user passes come after ours (the last one of a kind wins in the JVM).
    executor = f"{THREAD_STACK}{jit_options(short)}"  # the driver's JVM too (a local one is the executor)
    driver = f"{log4j} {executor}"
    if local:
        driver += f" {local_heap(conf.get('spark.driver.memory', launch['spark.driver.memory']), profile)}"
    for key, ours in (("spark.driver.extraJavaOptions", driver), ("spark.executor.extraJavaOptions", executor)):
        launch[key] = f"{ours} {conf.pop(key, '')}".strip()
    # etl's own JVM code (etl/compile/jvm.py): on the driver's class path; executors elsewhere get it as a jar
    own = jvm.launch_conf(conf)
    if own:
        conf.pop("spark.driver.extraClassPath", None)
        launch.update(own)
    archive = class_archive.options(launch.get("spark.driver.extraClassPath",
                                               conf.get("spark.driver.extraClassPath", "")))
    if archive:  # before the user's own options (theirs win)
        launch["spark.driver.extraJavaOptions"] = f"{archive} {launch['spark.driver.extraJavaOptions']}"
    local_jars = connector_jars()
    jars = [j for j in conf.pop("spark.jars", "").split(",") if j] + local_jars
    fetch = packages_conf(packages, conf, bool(local_jars))
    launch.update(fetch)
    if own and not local:
        jars.append(str(jvm.jar()))
    if jars:
        launch["spark.jars"] = ",".join(dict.fromkeys(jars))
    return launch, fetch


def build_session(app_name: str = "etl", master: str | None = None, conf: Mapping[str, str] | None = None,
                  ui: bool = True, log_file: str | None = None, profile: str | None = None,
                  short: bool = False, packages: Sequence[str] = ()) -> Any:
    """Create (or join) the SparkSession with etl's defaults; explicit `conf` always wins. `log_file`: where
    Spark's log lines go besides the console (those about failed tasks and queries only there). `profile`: a
    set of defaults of PROFILES (light). `short`: a session for a short run (`etl test`: see jit_options).
    `packages`: Maven coordinates of the connector jars the pipeline needs, fetched when java/lib has none
    (etl.runtime.packages; JarsUnavailable when they cannot be)."""
    if settings.current().no_spark:
        raise SparkForbidden("ETL_NO_SPARK is on: this process may not start Spark (the fast tests set it)")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    master, conf = profile_conf(profile, master, conf or {})
    existing = SparkContext._active_spark_context  # type: ignore[attr-defined]
    builder = SparkSession.builder.appName(app_name)
    joined = existing is not None or under_spark_submit()
    local = master is None or master.startswith("local")
    prepare_environment(local=local and not joined)
    fetch: dict[str, str] = {}  # spark.jars.packages and its Ivy settings, when this process fetches jars
    if not joined:
        builder = builder.master(master or "local[*]")
        launch, fetch = _launch_conf(conf, local, ui, log_file, profile, short, packages)
        for k, v in {**launch, **SQL_DEFAULTS, **conf}.items():
            builder = builder.config(k, v)
    elif master is not None:
        builder = builder.master(master)
    try:
        spark = builder.getOrCreate()
    except RuntimeError:  # pyspark's JAVA_GATEWAY_EXITED: the launcher exited (Ivy could not fetch `packages`?)
        check_launch(fetch)
        raise
    if joined:
        submitted = spark.sparkContext.getConf()
        for k, v in SQL_DEFAULTS.items():
            if k not in conf and not submitted.contains(k):
                spark.conf.set(k, v)
        for k, v in conf.items():
            try:
                spark.conf.set(k, v)
            except Exception as e:  # noqa: BLE001 - a static conf cannot change in a running JVM: say so
                raise ValueError(f"--conf {k} cannot be changed in an already started Spark "
                                 f"(pass it to spark-submit): {e}") from None
        spark.sparkContext.setLogLevel("WARN")
    ship_python_path(spark)
    quiet_python_loggers()
    quiet_budget_stops(spark)
    return spark


def ship_python_path(spark: Any) -> None:
    """On a cluster, executors' Python workers import etl from the folder the driver imported it from (first on
    their PYTHONPATH, through the context's environment: also under spark-submit): the workers run the driver's
    virtual environment (PYSPARK_PYTHON), and this makes their etl the driver's even when the venv holds another
    copy. The folder must exist on every machine (the same install path everywhere)."""
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        return
    here = str(Path(__file__).resolve().parents[2])
    parts = [p for p in sc.environment.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    sc.environment["PYTHONPATH"] = os.pathsep.join([here, *parts])


def stderr_to_file(spark: Any, path: str) -> None:
    """The JVM's System.err from now on appends to `path` (log4j's console appender keeps the console): what
    Python workers print on stderr, which Spark copies there (a daemon's BrokenPipe traceback when a query
    stops), and stray stack traces go to the run's log."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        stream = jvm.java.io.PrintStream(jvm.java.io.FileOutputStream(path, True), True, "UTF-8")
        jvm.java.lang.System.setErr(stream)
    except Exception as e:  # noqa: BLE001 - the console keeps them
        import logging

        logging.getLogger("etl.session").debug("stderr of the JVM stays on the console: %s", e)


def quiet_python_loggers() -> None:
    """PySpark logs every analysis error as JSON before raising it; etl reports them as diagnostics."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def quiet_budget_stops(spark: Any) -> None:
    """Spark logs a task stopped by a rule pattern's step budget as a lost job (ERROR, with the stack); etl
    recovers from it and says so in one warning (etl/compile/rules_jvm.py), so those lines are filtered out
    (etl/jvm/QuietBudget.java) unless ETL_LOG_LEVEL asks for Spark's logs."""
    if settings.current().log_level or not jvm.available(spark):
        return
    try:
        spark.sparkContext._jvm.etl.jvm.QuietBudget.install()  # type: ignore[attr-defined]
    except Exception as e:  # noqa: BLE001 - a user's own logging setup (not log4j-core) keeps Spark's lines
        import logging

        logging.getLogger("etl.session").debug("Spark's log lines of budget stops stay: %s", e)
