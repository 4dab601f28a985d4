"""The session etl builds: its launch defaults are in force, and Python runs over them."""

from __future__ import annotations

import socket

import pytest


def test_python_workers_are_reached_over_unix_domain_sockets(spark):
    """Where the platform has them (Linux, macOS, CI); elsewhere Spark's TCP default stays."""
    want = "true" if hasattr(socket, "AF_UNIX") else None
    assert spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled", None) == want

    def double(batches):
        import pyarrow.compute as pc

        for rb in batches:
            yield rb.set_column(0, "id", pc.multiply(rb.column(0), 2))

    got = spark.range(0, 5, 1, 2).mapInArrow(double, "id long").collect()
    assert sorted(r.id for r in got) == [0, 2, 4, 6, 8]


def test_python_workers_and_data_source_planners_import_the_installed_pyspark(spark):
    """With pip's pyspark, Spark's pyspark.zip duplicates the installed package (minus its bytecode): the
    launcher keeps it off the path of every Python process Spark starts -- UDF workers and the planner and
    reader of a Python data source alike."""
    import os

    from pyspark.sql.datasource import DataSource, DataSourceReader

    from etl.runtime.pylauncher import redundant_zips

    zips = redundant_zips()
    assert any(z.endswith("pyspark.zip") for z in zips)  # this install is pip's: the launcher applies
    assert os.path.basename(spark.sparkContext.pythonExec).startswith("python-")  # the launcher

    def where(batches):
        import pyarrow as pa
        import pyspark

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"f": [pyspark.__file__], "p": [os.environ.get("PYTHONPATH", "")]})

    class Reader(DataSourceReader):
        def read(self, partition):
            import pyspark

            yield pyspark.__file__, os.environ.get("PYTHONPATH", "")

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "etl_test_where_is_pyspark"

        def schema(self):
            import pyspark

            # the planner process: a zip here would fail the read below
            assert ".zip" not in pyspark.__file__, pyspark.__file__
            return "f string, p string"

        def reader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    rows = spark.range(1).mapInArrow(where, "f string, p string").collect()
    rows += spark.read.format(Source.name()).load().collect()
    assert len(rows) == 2
    for r in rows:
        assert ".zip" not in r.f and r.f.endswith(os.path.join("pyspark", "__init__.py")), r.f
        assert not set(r.p.split(os.pathsep)) & set(zips), r.p


def test_a_local_session_commits_and_touches_its_heap_at_start(spark):
    from etl.runtime.session import heap_options, huge_pages

    args = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-XX:+AlwaysPreTouch" in args and "-Xms2g" in args
    assert ("-XX:+UseTransparentHugePages" in args) == huge_pages()
    runtime = spark._jvm.java.lang.Runtime.getRuntime()
    assert runtime.totalMemory() >= 2 * 1024**3 - 64 * 1024**2  # committed up front (minus survivor rounding)
    thp = " -XX:+UseTransparentHugePages" if huge_pages() else ""
    assert heap_options("4g") == "-Xms4g -XX:+AlwaysPreTouch" + thp
    assert heap_options("512MB") == "-Xms512m -XX:+AlwaysPreTouch" + thp
    assert heap_options("3072") == "-Xms3072m -XX:+AlwaysPreTouch" + thp


def test_the_quick_jit_setting_reaches_the_jvm(spark, monkeypatch):
    from etl import settings
    from etl.runtime.session import jit_options

    # tests/conftest.py turns it on for the whole run: the shared session was started with it
    args = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-XX:TieredStopAtLevel=1" in args and "-XX:ReservedCodeCacheSize=240m" in args
    # C1 alone would reserve 48 MB of code cache, which Spark's code fills (then flushed and compiled again)
    size = spark._jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        spark._jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    assert size.getVMOption("ReservedCodeCacheSize").getValue() == str(240 * 1024 * 1024)
    monkeypatch.setenv("ETL_JVM_QUICK_JIT", "off")
    settings.reset()
    assert jit_options() == jit_options(short=True) == ""
    monkeypatch.setenv("ETL_JVM_QUICK_JIT", "on")
    settings.reset()
    assert jit_options() == jit_options(short=True) == " -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
    monkeypatch.setenv("ETL_JVM_QUICK_JIT", "auto")  # the default: `etl test` (short) only
    settings.reset()
    assert (jit_options(), jit_options(short=True)) == ("", " -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m")
    monkeypatch.setenv("ETL_JVM_QUICK_JIT", "sometimes")
    settings.reset()
    with pytest.raises(settings.SettingsError, match="ETL_JVM_QUICK_JIT"):
        settings.current()
    monkeypatch.undo()
    settings.reset()


def test_huge_pages_follow_the_kernels_setting(tmp_path):
    from etl.runtime.session import huge_pages

    f = tmp_path / "enabled"
    for mode, want in (("always [madvise] never", True), ("[always] madvise never", True),
                       ("always madvise [never]", False)):
        f.write_text(mode + "\n")
        assert huge_pages(str(f)) is want, mode
    assert huge_pages(str(tmp_path / "missing")) is False
