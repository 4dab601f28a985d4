"""`etl run --profile light`: its master and settings under the user's --master and --conf, and a heap that is
neither sized up front nor pre-touched."""

from __future__ import annotations

import pytest

from etl.runtime.session import PROFILE_JAVA, heap_options, profile_conf


def test_the_light_profile_sets_one_core_a_small_heap_and_bounded_state():
    master, conf = profile_conf("light", None, {})
    assert master == "local[1]"
    assert conf["spark.driver.memory"] == "512m"
    assert conf["spark.sql.shuffle.partitions"] == "1"
    assert conf["spark.python.worker.reuse"] == "true"
    assert conf["spark.memory.offHeap.enabled"] == "false"
    assert conf["spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage"] == "true"
    assert conf["spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"] == "64"
    assert conf["spark.driver.extraJavaOptions"] == PROFILE_JAVA["light"]
    assert "-XX:+UseSerialGC" in PROFILE_JAVA["light"] and "-XX:MaxDirectMemorySize=128m" in PROFILE_JAVA["light"]
    assert "spark.master" not in conf


def test_the_users_master_and_conf_win_over_the_profile():
    master, conf = profile_conf("light", "local[2]", {"spark.driver.memory": "768m",
                                                      "spark.driver.extraJavaOptions": "-XX:+UseG1GC"})
    assert master == "local[2]"
    assert conf["spark.driver.memory"] == "768m"
    assert conf["spark.driver.extraJavaOptions"] == PROFILE_JAVA["light"] + " -XX:+UseG1GC"  # the last one wins


def test_no_profile_changes_nothing_and_an_unknown_one_is_refused():
    assert profile_conf(None, None, {"a": "1"}) == (None, {"a": "1"})
    with pytest.raises(ValueError, match="unknown profile 'tiny' \\(known: light\\)"):
        profile_conf("tiny", None, {})


def test_the_light_heap_is_not_pre_touched():
    assert heap_options("512m", pretouch=False) == ""
    assert heap_options("512m").startswith("-Xms512m -XX:+AlwaysPreTouch")


def test_a_local_heap_is_touched_at_start_unless_a_profile_or_the_setting_says_otherwise(monkeypatch):
    from etl import settings
    from etl.runtime.session import local_heap

    monkeypatch.setenv("ETL_JVM_PRETOUCH", "on")
    settings.reset()
    assert local_heap("2g", None).startswith("-Xms2g -XX:+AlwaysPreTouch")
    assert local_heap("2g", "light") == ""
    monkeypatch.setenv("ETL_JVM_PRETOUCH", "off")
    settings.reset()
    assert local_heap("2g", None) == ""


def test_a_real_time_run_gets_two_task_slots_a_core_unless_told(monkeypatch):
    """Real-time mode's tasks hold their slots for a whole batch: on local[*] the dead letters' micro-batch waited
    for the batch's end (bench/kafka.py: p99 1.5 s against 0.6 s with twice the slots)."""
    from etl.runtime import session

    monkeypatch.setattr(session.os, "cpu_count", lambda: 2)
    assert session.run_master(None, None, "realtime", micro_batches=False) == "local[4]"
    assert session.run_master("local[2]", None, "realtime", micro_batches=False) == "local[2]"  # the user's
    assert session.run_master(None, "light", "realtime", micro_batches=False) is None  # the profile's
    assert session.run_master(None, None, "realtime", micro_batches=True) is None  # --once / --drain
    assert session.run_master(None, None, "interval", micro_batches=False) is None
    monkeypatch.setattr(session, "under_spark_submit", lambda: True)
    assert session.run_master(None, None, "realtime", micro_batches=False) is None  # spark-submit's master
