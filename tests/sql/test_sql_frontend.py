"""The SQL front-end's document: templating, connectors, emit, metadata, tests side file, folders, CLI."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from etl.check import check_file, pipeline_files
from etl.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _check(tmp_path: Path, text: str, name: str = "job.sql", **kw):
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    return check_file(f, **kw)


def _codes(c) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in c.report.sorted()]


PRINT = "CREATE TABLE o (a VARCHAR) WITH (type = 'print');\n"


def test_vars_env_and_line_numbers_through_templating(tmp_path):
    text = """\
        SET 'vars.topic' = 'orders';
        CREATE TABLE t (a VARCHAR)
        WITH (type = 'kafka', topic = '{{ vars.topic }}', `bootstrap.servers` = '{{ env("KB", "h:9092") }}');
        {% if vars.topic == 'orders' %}
        CREATE TABLE o (a VARCHAR) WITH (type = 'print');
        {% endif %}
        {% for i in range(2) %}
        -- line {{ i }}
        {% endfor %}
        INSERT INTO o SELECT a FROM t WHERE b = 1;
        """
    c = _check(tmp_path, text, environ={"KB": "k1:9092"})
    assert _codes(c) == [("E310", 10, 37)]  # the line of the file, after an {% if %} and a {% for %}
    c = _check(tmp_path, text.replace("b = 1", "a = 'x'"), environ={"KB": "k1:9092"})
    assert c.plan is not None
    src = c.pipeline.sources[0]
    assert (src.topics, src.bootstrap_servers) == (["orders"], "k1:9092")
    assert c.document.vars == {"topic": "orders"} and c.document.secrets == {"k1:9092"}
    c = _check(tmp_path, text.replace("b = 1", "a = 'x'"), cli_vars={"topic": "other"}, environ={})
    assert _codes(c) == [("E201", 10, 13)]  # --var wins over SET: no table o any more
    assert c.pipeline is None


def test_connector_families_map_onto_the_specs(tmp_path):
    c = _check(tmp_path, """\
        CREATE TABLE r (a VARCHAR, n INT) WITH (type = 'RocketMQ', TOPIC = 't', groupName = 'g',
          namesrvAddr = 'h:9876', tag = 'A || B', isJsonData = 'true', max_messages_per_trigger = '50');
        CREATE TABLE d (a VARCHAR, name VARCHAR) WITH (type = 'mysql', url = 'jdbc:mysql://db:3307/shop?x=1',
          tableName = 'users', userName = 'u', password = 'p', cacheTTLMs = '30000');
        CREATE TABLE e (a VARCHAR, name VARCHAR, PRIMARY KEY (a) NOT ENFORCED) WITH (type = 'elasticsearch',
          host = 'es1,es2', port = '9200', index = 'i', authUsername = 'u', authPassword = 'p');
        CREATE TABLE m (a VARCHAR, name VARCHAR, PRIMARY KEY (a)) WITH (type = 'jdbc',
          url = 'jdbc:mariadb://db/shop', tableName = 'out', userName = 'u', batch_size = '10');
        CREATE VIEW v AS SELECT r.a, x.name FROM r JOIN d FOR SYSTEM_TIME AS OF PROCTIME() AS x ON r.a = x.a;
        INSERT INTO e SELECT * FROM v;
        INSERT INTO m SELECT * FROM v;
        """)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    dump = {s.id: s.model_dump(by_alias=True, exclude_defaults=True) for s in c.pipeline.components()}
    assert dump["r"] == {"id": "r", "type": "rocketmq", "namesrv": "h:9876", "topic": "t", "group": "g",
                         "tags": "A || B", "max_messages_per_trigger": 50, "schema": {"a": "string", "n": "int"}}
    assert dump["d"] == {"id": "d", "type": "mysql", "host": "db", "port": 3307, "database": "shop",
                         "user": "u", "password": "p", "table": "users", "refresh": "30s",
                         "schema": {"a": "string", "name": "string"}}
    assert dump["e"] == {"id": "e", "type": "elasticsearch", "inputs": ["v"], "hosts": ["http://es1:9200",
                         "http://es2:9200"], "index": "i", "id_fields": ["a"], "username": "u", "password": "p"}
    assert dump["m"] == {"id": "m", "type": "mysql", "inputs": ["v"], "batch_size": 10, "host": "db",
                         "database": "shop", "user": "u", "table": "out", "mode": "upsert", "key": ["a"]}
    assert dump["v_lookup"] == {"id": "v_lookup", "type": "lookup", "inputs": ["r"], "table": "d",
                                "on": {"a": "a"}, "fields": ["name"], "how": "inner"}
    assert dump["v"] == {"id": "v", "type": "select", "inputs": ["v_lookup"], "fields": ["a", "name"]}


def test_flink_kafka_and_jdbc_options(tmp_path):
    """'properties.*' are client settings (options), scan.startup.mode specific-offsets / timestamp map onto
    starting_offsets / Spark's startingTimestamp, a JDBC 'driver' has no effect (W013). Against a real topic:
    tests/integration/test_sql_servers.py."""
    c = _check(tmp_path, """\
        CREATE TABLE k (a VARCHAR) WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'json',
          'properties.bootstrap.servers' = 'h:9092', 'properties.group.id' = 'g',
          'properties.isolation.level' = 'read_committed', 'scan.startup.mode' = 'specific-offsets',
          'scan.startup.specific-offsets' = 'partition:0,offset:42;partition:1,offset:-2');
        CREATE TABLE s (a VARCHAR) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'h:9092',
          'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '1767225600000');
        CREATE TABLE o (a VARCHAR) WITH ('connector' = 'kafka', 'topic' = 'o', 'properties.bootstrap.servers' = 'h:9092',
          'properties.acks' = 'all', 'format' = 'json');
        CREATE TABLE m (a VARCHAR) WITH ('connector' = 'jdbc', 'url' = 'jdbc:mysql://db:3306/shop', 'table-name' = 't',
          'username' = 'u', 'driver' = 'com.mysql.cj.jdbc.Driver');
        INSERT INTO o SELECT a FROM k;
        INSERT INTO m SELECT a FROM s;
        """)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    assert _codes(c) == [("W013", 10, 21)]
    dump = {s.id: s.model_dump(by_alias=True, exclude_defaults=True) for s in c.pipeline.components()}
    assert dump["k"]["options"] == {"group.id": "g", "isolation.level": "read_committed"}
    assert dump["k"]["starting_offsets"] == {"t": {"0": 42, "1": -2}}
    assert dump["s"]["options"] == {"startingTimestamp": "1767225600000"} and "starting_offsets" not in dump["s"]
    assert dump["o"]["options"] == {"acks": "all"}


SINK_KEYS = """\
    CREATE TABLE src (a VARCHAR) WITH (type = 'file', path = 's.jsonl');
    CREATE TABLE m (a VARCHAR) WITH ('connector' = 'jdbc', 'url' = 'jdbc:mysql://db:3306/shop', 'table-name' = 'm',
      'username' = 'u', 'sink.buffer-flush.max-rows' = '500', 'sink.buffer-flush.interval' = '2 min',
      'sink.max-retries' = '3', 'sink.buffer-flush.max-size' = '512kb');
    CREATE TABLE e (a VARCHAR) WITH ('connector' = 'elasticsearch-7', 'hosts' = 'http://es:9200', 'index' = 'i',
      'sink.bulk-flush.max-actions' = '0', 'sink.bulk-flush.max-size' = '2mb', 'sink.bulk-flush.interval' = '0',
      'sink.bulk-flush.backoff.max-retries' = '0', 'sink.bulk-flush.backoff.delay' = '100 ms');
    CREATE TABLE r (a VARCHAR) WITH (type = 'rds', url = 'jdbc:mysql://db:3306/shop', tableName = 'r',
      userName = 'u', batchSize = '50', flushIntervalMs = '3000', maxRetryTimes = '2');
    CREATE TABLE k (a VARCHAR) WITH ('connector' = 'kafka', 'topic' = 'o', 'properties.bootstrap.servers' = 'h:9092',
      flushInterval = '1500');
    INSERT INTO m SELECT a FROM src;
    INSERT INTO e SELECT a FROM src;
    INSERT INTO r SELECT a FROM src;
    INSERT INTO k SELECT a FROM src;
    """


def test_sink_buffering_flush_and_retry_keys_map_onto_the_sink_spec(tmp_path):
    """Flink's JDBC / Elasticsearch keys and Blink's batchSize, flushIntervalMs, maxRetryTimes: each onto the spec's
    batch_size, flush_interval, max_buffer, retry (Flink's sizes are binary; '0' disables a trigger: the most)."""
    c = _check(tmp_path, SINK_KEYS)
    assert c.plan is not None and _codes(c) == [], [d.render() for d in c.report.sorted()]
    got = {s.id: (s.batch_size, s.flush_interval.seconds, int(s.max_buffer), s.retry.max_attempts,
                  s.retry.initial_backoff.seconds) for s in c.pipeline.sinks}
    assert got == {"m": (500, 120.0, 512 * 1024, 4, 0.2),
                   "e": (10_000_000, 365 * 86400.0, 2 * 1024**2, 1, 0.1),
                   "r": (50, 3.0, 64 * 1000**2, 3, 0.2),
                   "k": (1000, 1.5, 64 * 1000**2, 8, 0.2)}  # the defaults where no key sets them
    assert _codes(_check(tmp_path, SINK_KEYS.replace("flushInterval = '1500'", "flushInterval = '1500', "
                                                     "flush_interval = '20s'"))) == [
        ("E104", 11, 27)]  # two keys for one setting: at the second


@pytest.mark.parametrize("key, value, message", [
    ("sink.buffer-flush.interval", "5 parsecs",
     "invalid sink.buffer-flush.interval: '5 parsecs' is not a duration"),
    ("sink.buffer-flush.interval", "400 d", "invalid sink.buffer-flush.interval: '400 d' is longer than etl takes"),
    ("sink.buffer-flush.max-rows", "many", "invalid sink.buffer-flush.max-rows: 'many' is not a number of rows"),
    ("sink.buffer-flush.max-rows", "20000000",
     "invalid sink.buffer-flush.max-rows: 20000000 rows is more than etl's batch_size takes"),
    ("sink.bulk-flush.max-size", "2 parsecs", "invalid sink.bulk-flush.max-size: '2 parsecs' is not a memory size"),
    ("sink.max-retries", "-1", "invalid sink.max-retries: '-1' is not a number of retries"),
    ("sink.max-retries", "1000", "invalid sink.max-retries: 1000 retries is more than etl takes"),
    ("sink.bulk-flush.backoff.delay", "0.5s", "invalid sink.bulk-flush.backoff.delay: '0.5s' is not a duration"),
])
def test_a_bad_sink_setting_is_reported_at_its_value(tmp_path, key, value, message):
    c = _check(tmp_path, f"""\
        CREATE TABLE src (a VARCHAR) WITH (type = 'file', path = 's.jsonl');
        CREATE TABLE m (a VARCHAR) WITH ('connector' = 'jdbc', 'url' = 'jdbc:mysql://db:3306/shop',
          'table-name' = 'm', 'username' = 'u', '{key}' = '{value}');
        INSERT INTO m SELECT a FROM src;
        """)
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()] == [
        ("E102", 3, 46 + len(key), message)]


def test_sink_keys_are_not_source_keys(tmp_path):
    c = _check(tmp_path, """\
        CREATE TABLE src (a VARCHAR) WITH (type = 'file', path = 's.jsonl', 'sink.buffer-flush.max-rows' = '5',
          batchSize = '5');
        CREATE TABLE o (a VARCHAR) WITH (type = 'print');
        INSERT INTO o SELECT a FROM src;
        """)
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()] == [
        ("E100", 1, 69, "unknown option 'sink.buffer-flush.max-rows' for a file source"),
        ("W013", 2, 3, "option 'batchSize' has no effect in etl")]


def test_emit_and_metadata_columns(tmp_path):
    c = _check(tmp_path, """\
        CREATE TABLE k (a VARCHAR, ts TIMESTAMP, t VARCHAR METADATA FROM 'topic', h MAP<STRING, STRING> METADATA
          FROM 'headers' VIRTUAL, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
        WITH ('connector' = 'kafka', 'topic' = 'x', 'properties.bootstrap.servers' = 'h:1', 'format' = 'csv');
        CREATE TABLE o (t VARCHAR, n BIGINT) WITH (type = 'print');
        INSERT INTO o SELECT t, COUNT(*) FROM k GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), t
        EMIT WITH DELAY '30' SECOND BEFORE WATERMARK;
        """)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    by_id = {t.id: t for t in c.pipeline.transforms}
    assert by_id["k_parsed"].schema_ == {"a": "string", "ts": "timestamp"}
    assert by_id["k_columns"].fields == ["a", "ts", "topic AS t", "headers AS h"]
    assert by_id["o_window"].emit.early.seconds == 30
    assert by_id["o_window"].group_by == ["t"]
    # the time column is parsed from the message body: the window, not the source, carries the event time
    assert c.pipeline.sources[0].event_time is None
    assert (by_id["o_window"].event_time.field, by_id["o_window"].event_time.watermark.seconds) == ("ts", 2)


def _side_file_codes(tmp_path, tests_yaml: str):
    (tmp_path / "job.tests.yaml").write_text(tests_yaml)
    c = _check(tmp_path, "CREATE TABLE t (a VARCHAR) WITH (type = 'file', path = 't');\n" + PRINT
               + "INSERT INTO o SELECT a FROM t;\n")
    return c, [(d.code, d.span.file.rsplit("/", 1)[1], d.span.line, d.span.col) for d in c.report.sorted()]


def test_tests_side_file_and_its_positions(tmp_path):
    c, codes = _side_file_codes(tmp_path, "- name: one\n  inputs: {t: [{a: x}]}\n  expect: {o: [{a: x}]}\n"
                                          "- name: two\n  inputs: {nope: []}\n")
    assert codes == [("E207", "job.tests.yaml", 5, 12)]
    assert [t.name for t in c.pipeline.tests] == ["one", "two"]


def test_tests_side_file_batches_and_their_positions(tmp_path):
    c, codes = _side_file_codes(tmp_path, "tests:\n- name: one\n  batches:\n  - inputs: {t: [{a: x}]}\n"
                                          "  - inputs: {t: []}\n    expect: {oo: []}\n    watermark: soon\n")
    assert codes == [("E207", "job.tests.yaml", 6, 14), ("E102", "job.tests.yaml", 7, 16)]
    assert [len(t.batches) for t in c.pipeline.tests] == [2]


def test_a_folder_lists_a_script_once(tmp_path):
    for name in ("a.sql", "a.yaml", "a.tests.yaml", "b.yaml", "c.tests.yaml"):
        (tmp_path / name).write_text("")
    assert [Path(f).name for f in pipeline_files([tmp_path])] == ["a.sql", "b.yaml", "c.tests.yaml"]


def test_cli_validate_and_explain_a_script():
    runner = CliRunner()
    res = runner.invoke(app, ["validate", str(ROOT / "pipelines" / "sql" / "filter.sql")])
    assert res.exit_code == 0
    res = runner.invoke(app, ["explain", str(ROOT / "pipelines" / "sql" / "window.sql")])
    assert res.exit_code == 0 and res.stdout.startswith("pipeline window\n")
    res = runner.invoke(app, ["validate", str(ROOT / "tests" / "fixtures" / "sql_invalid" / "unknown_table.sql")])
    assert res.exit_code == 1 and "unknown_table.sql:5:46: E201 unknown table or view 'orderz'" in res.stdout


def test_emit_on_a_query_over_a_windowed_view(tmp_path):
    """rsqldb writes EMIT on the INSERT that reads a windowed view: the view's window emits early."""
    c = _check(tmp_path, """\
        CREATE TABLE c (u VARCHAR, url VARCHAR, ts TIMESTAMP, WATERMARK wk FOR ts AS withOffset(ts, 2000))
        WITH (type = 'rocketmq', topic = 'c', groupName = 'g', namesrvAddr = 'h:9876', isJsonData = 'true',
              msgIsJsonArray = 'false');
        CREATE TABLE o (window_start TIMESTAMP, u VARCHAR, clicks BIGINT) WITH (type = 'print');
        CREATE VIEW v AS
        SELECT TUMBLE_START(ts, INTERVAL '10' MINUTE) AS window_start, u, count(url) AS clicks
        FROM c GROUP BY TUMBLE(ts, INTERVAL '10' MINUTE), u;
        INSERT INTO o SELECT * FROM v
        EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK;
        """)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    (w,) = [t for t in c.pipeline.transforms if t.type == "window"]
    assert (w.id, w.emit.early.seconds, w.aggregates[0].fn, w.aggregates[0].field) == ("v_window", 60, "count", "url")
    assert c.pipeline.sources[0].event_time.watermark.seconds == 2


def test_emit_on_a_group_by_without_a_window_is_the_aggregates_every(tmp_path):
    """rsqldb's EMIT on a non-window aggregate says how often updated rows go out: at most one row per key every n
    (the aggregate's `every`), on the INSERT's own GROUP BY or on an INSERT reading a view of one."""
    c = _check(tmp_path, """\
        CREATE TABLE orders (customer VARCHAR, amount DOUBLE, ts TIMESTAMP) WITH (type = 'file', path = 'o.jsonl');
        CREATE TABLE o (customer VARCHAR, n BIGINT) WITH (type = 'print');
        CREATE TABLE o2 (customer VARCHAR, total DOUBLE) WITH (type = 'print');
        CREATE TABLE raw (customer VARCHAR) WITH (type = 'print');
        CREATE VIEW totals AS SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer;
        INSERT INTO o SELECT customer, COUNT(*) AS n FROM orders GROUP BY customer
        EMIT WITH DELAY '30' SECOND BEFORE WATERMARK;
        INSERT INTO o2 SELECT * FROM totals EMIT WITH DELAY '2' MINUTE BEFORE WATERMARK;
        INSERT INTO raw SELECT customer FROM orders;
        """)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    every = {t.id: str(t.every) for t in c.pipeline.transforms if t.type == "aggregate"}
    assert every == {"o_aggregate": "30s", "totals": "2m"}
    from etl.physical.grouping import paced_by

    # the pace of each sink's query (etl.runtime.runner's trigger): the aggregate it reads; none for the raw rows
    assert {s: paced_by(c.plan.graph, s) for s in ("o", "o2", "raw")} == {
        "o": (30.0, "o_aggregate"), "o2": (120.0, "totals"), "raw": None}
    from etl.plan.explain import explain_plan

    assert "    every: 30s (a micro-batch at most every 30s: a key's row at most that often)\n" in explain_plan(c.plan)
    bad = _check(tmp_path, """\
        CREATE TABLE orders (customer VARCHAR, ts TIMESTAMP) WITH (type = 'file', path = 'o.jsonl');
        CREATE TABLE o (customer VARCHAR, n BIGINT) WITH (type = 'print');
        INSERT INTO o SELECT customer, COUNT(*) AS n FROM orders GROUP BY customer
        EMIT WITHOUT DELAY AFTER WATERMARK;
        """)
    assert [(d.code, d.span.line, d.span.col, d.message, d.hint) for d in bad.report.sorted()] == [
        ("E011", 4, 6, "EMIT ... AFTER WATERMARK on a GROUP BY without a window: no window closes, so no row of it "
                       "is ever final and there is nothing to update after the watermark",
         "write EMIT WITH DELAY 'n' UNIT BEFORE WATERMARK: at most one update row per key every n")]


@pytest.mark.parametrize("lateness, emit, expected", [
    ("'10 min'", "WITH DELAY '5' SECOND AFTER WATERMARK", (None, 600, 5)),
    ("'90s'", "WITHOUT DELAY AFTER WATERMARK", (None, 90, None)),
    ("'1 h'", "WITH DELAY '1' MINUTE BEFORE WATERMARK, WITHOUT DELAY AFTER WATERMARK", (60, 3600, None)),
    ("'120000'", "WITH DELAY '2' SECONDS AFTER WATERMARK", (None, 120, 2)),  # a bare number: milliseconds
])
def test_emit_after_watermark_is_a_late_update(tmp_path, lateness, emit, expected):
    """AFTER WATERMARK: `late: update`, `every` its delay, `allowed_lateness` Flink's allow-lateness option;
    on a query over a windowed view too."""
    c = _check(tmp_path, f"""\
        SET 'table.exec.emit.allow-lateness' = {lateness};
        CREATE TABLE t (u VARCHAR, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
        WITH (type = 'file', path = 't');
        CREATE TABLE o (u VARCHAR, n BIGINT) WITH (type = 'print');
        CREATE VIEW v AS SELECT u, COUNT(*) AS n FROM t GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), u;
        INSERT INTO o SELECT * FROM v
        EMIT {emit};
        """)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    (w,) = [t for t in c.pipeline.transforms if t.type == "window"]
    e = w.emit
    got = (e.early and e.early.seconds, e.allowed_lateness.seconds, e.every and e.every.seconds)
    assert (e.late, e.too_late, got) == ("update", "drop", expected)


def test_join_keys_with_different_names(tmp_path):
    c = _check(tmp_path, """\
        CREATE TABLE t (id BIGINT, perform_id BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
        WITH (type = 'file', path = 't');
        CREATE TABLE p (id BIGINT, name VARCHAR, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
        WITH (type = 'file', path = 'p');
        CREATE TABLE o (ticket BIGINT, perform VARCHAR, pts TIMESTAMP) WITH (type = 'print');
        INSERT INTO o SELECT t.id, p.name, p.ts FROM t JOIN p
          ON t.perform_id = p.id AND p.ts BETWEEN t.ts - INTERVAL '1' HOUR AND t.ts + INTERVAL '1' HOUR;
        """)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    by_id = {t.id: t for t in c.pipeline.transforms}
    assert by_id["o_keys"].fields == ["id AS perform_id", "name", "ts"]
    assert (by_id["o_join"].inputs, by_id["o_join"].on, by_id["o_join"].within.upper) == \
        (["t", "o_keys"], ["perform_id"], 3600)
    assert by_id["o_select"].fields == ["id AS ticket", "name AS perform", "o_keys_ts AS pts"]


def test_a_script_path_that_is_a_pipe_is_refused_not_waited_on(tmp_path):
    import os

    fifo = tmp_path / "job.sql"
    os.mkfifo(fifo)
    c = check_file(fifo)
    assert c.plan is None
    assert _codes(c) == [("E005", 1, 1)]
    assert "not a regular file" in c.report.errors[0].message


JOIN_TABLES = """\
CREATE TABLE imp (ad_id VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '30' SECOND)
WITH (type = 'file', path = 'imp');
CREATE TABLE clk (ad_id VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '30' SECOND)
WITH (type = 'file', path = 'clk');
CREATE TABLE o (ad_id VARCHAR, ts TIMESTAMP, clk_ts TIMESTAMP) WITH (type = 'print');
"""


@pytest.mark.parametrize("side,how", [("", "inner"), ("LEFT ", "left"), ("RIGHT ", "right"), ("FULL ", "full"),
                                      ("FULL OUTER ", "full")])
def test_stream_join_sides_and_an_asymmetric_bound(tmp_path, side, how):
    c = _check(tmp_path, JOIN_TABLES + f"INSERT INTO o SELECT i.ad_id, i.ts, c.ts FROM imp AS i {side}JOIN clk AS c "
               "ON i.ad_id = c.ad_id AND c.ts BETWEEN i.ts - INTERVAL '5' MINUTE AND i.ts + INTERVAL '1' MINUTE;\n")
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    j, *select = c.pipeline.transforms
    assert (j.how, str(j.within), j.within.lower, j.within.upper) == (how, "[-5m, +1m]", -300.0, 60.0)
    # i.ad_id is NULL in a row the join pads on the left (Flink); the join's ad_id holds the right's key there
    assert [s.fields for s in select] == ([["CASE WHEN ts IS NULL THEN NULL ELSE ad_id END AS ad_id", "ts",
                                            "clk_ts"]] if how in ("right", "full") else [])


def test_stream_join_bound_one_sided_symmetric_and_empty(tmp_path):
    q = "INSERT INTO o SELECT i.ad_id, i.ts, c.ts FROM imp AS i JOIN clk AS c ON i.ad_id = c.ad_id AND {};\n"
    c = _check(tmp_path, JOIN_TABLES + q.format("c.ts >= i.ts AND c.ts <= i.ts + INTERVAL '10' MINUTE"))
    assert str(c.pipeline.transforms[0].within) == "[0s, +10m]"
    c = _check(tmp_path, JOIN_TABLES + q.format("c.ts BETWEEN i.ts - INTERVAL '1' MINUTE AND i.ts + INTERVAL '1' "
                                                "MINUTE"))
    assert str(c.pipeline.transforms[0].within) == "1m"
    c = _check(tmp_path, JOIN_TABLES + q.format("c.ts BETWEEN i.ts + INTERVAL '2' MINUTE AND i.ts + INTERVAL '1' "
                                                "MINUTE"))
    assert _codes(c) == [("E104", 6, 73)]


@pytest.mark.parametrize("cond,within,condition", [
    # Flink's three interval join conditions, the left side's time first (ltime = rtime, ...)
    ("i.ts = c.ts", "0ms", None),
    ("i.ts >= c.ts AND i.ts < c.ts + INTERVAL '10' MINUTE", "[-10m, 0s]", "ts < clk_ts + INTERVAL '10' MINUTE"),
    ("i.ts BETWEEN c.ts - INTERVAL '10' SECOND AND c.ts + INTERVAL '5' SECOND", "[-5s, +10s]", None),
    # an open lower end and an extra ON condition: the join's condition, over its output columns
    ("c.ts > i.ts AND c.ts <= i.ts + INTERVAL '1' MINUTE AND c.ad_id <> 'x'", "[0s, +1m]",
     "clk_ts > ts AND ad_id <> 'x'"),
    # two bounds of one end: both hold (the narrower one)
    ("c.ts BETWEEN i.ts - INTERVAL '5' MINUTE AND i.ts + INTERVAL '5' MINUTE AND c.ts <= i.ts", "[-5m, 0s]", None),
])
def test_interval_join_conditions_as_flink_writes_them(tmp_path, cond, within, condition):
    c = _check(tmp_path, JOIN_TABLES + "INSERT INTO o SELECT i.ad_id, i.ts, c.ts FROM imp AS i JOIN clk AS c "
               f"ON i.ad_id = c.ad_id AND {cond};\n")
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    (j,) = c.pipeline.transforms
    assert (j.on, str(j.within), j.condition) == (["ad_id"], within, condition)


def test_interval_join_of_flinks_example_as_a_comma_join(tmp_path):
    """FROM Orders o, Shipments s WHERE o.id = s.order_id AND o.order_time BETWEEN s.ship_time - INTERVAL '4' HOUR
    AND s.ship_time (Flink's documented query): the WHERE conditions reading s are the join's; the rest filter."""
    c = _check(tmp_path, JOIN_TABLES + "INSERT INTO o SELECT i.ad_id, i.ts, c.ts FROM imp i, clk c WHERE "
               "i.ad_id = c.ad_id AND i.ts BETWEEN c.ts - INTERVAL '4' HOUR AND c.ts AND i.ad_id <> 'x';\n")
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    j, f = c.pipeline.transforms
    assert (j.type, j.how, j.on, str(j.within), j.condition) == ("join", "inner", ["ad_id"], "[0s, +4h]", None)
    assert (f.type, f.inputs, f.expr) == ("filter", [j.id], "ad_id <> 'x'")


@pytest.mark.parametrize("cond,code,line,col", [
    ("c.ts > i.ts AND c.ts < i.ts", "E104", 6, 73),  # (0, 0): empty
    ("c.ts > i.ts", "W015", 6, 61),  # one end only: a regular join in Flink (its state unbounded: W015 at the JOIN)
    ("i.ad_id = c.ad_id", "W015", 6, 61),
])
def test_interval_join_without_an_interval(tmp_path, cond, code, line, col):
    c = _check(tmp_path, JOIN_TABLES + "INSERT INTO o SELECT i.ad_id, i.ts, c.ts FROM imp AS i JOIN clk AS c "
               f"ON i.ad_id = c.ad_id AND {cond};\n")
    assert _codes(c) == [(code, line, col)]


def test_outer_join_key_of_a_side_without_known_event_time(tmp_path):
    """A LEFT JOIN pads the right side: its key reads NULL there, told by its event time; unknown: E011 at the
    column, not the other side's key silently."""
    c = _check(tmp_path, JOIN_TABLES + "CREATE VIEW v AS SELECT ad_id, ts AS t2 FROM clk;\n"
               "INSERT INTO o SELECT i.ad_id, i.ts, v.ad_id FROM imp AS i LEFT JOIN v "
               "ON i.ad_id = v.ad_id AND v.t2 BETWEEN i.ts AND i.ts + INTERVAL '1' MINUTE;\n")
    assert _codes(c) == [("E011", 7, 39)]


def test_to_yaml_of_an_invalid_script_hides_a_url_password(tmp_path):
    script = tmp_path / "job.sql"
    script.write_text("CREATE TABLE db (id BIGINT) WITH (type = 'mysql', url = "
                      "'jdbc:mysql://admin:hunter2@db:3306/shop', tableName = 't', userName = 'u');\n")
    res = CliRunner().invoke(app, ["to-yaml", str(script)])
    assert res.exit_code == 1
    assert res.stderr.splitlines()[0] == f"{script}:1:57: E102 invalid JDBC url 'jdbc:mysql://admin:***@db:3306/shop'"
    assert "hunter2" not in res.stdout + res.stderr


JOINED = """\
    CREATE TABLE a (k VARCHAR, x INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
    WITH (type = 'file', filePath = 'a.jsonl');
    CREATE TABLE b (k VARCHAR, y INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
    WITH (type = 'file', filePath = 'b.jsonl');
    CREATE TABLE o (k VARCHAR, ts TIMESTAMP, k0 VARCHAR, ts0 TIMESTAMP) WITH (type = 'print');
    CREATE TABLE o2 (k VARCHAR, y INT, ts TIMESTAMP, n INT) WITH (type = 'print');
    CREATE VIEW v AS SELECT * FROM a LEFT JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - INTERVAL '1' MINUTE AND a.ts;
    INSERT INTO o SELECT k, ts, k0, ts0 FROM v;
    INSERT INTO o2 SELECT b.*, x AS n FROM a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - INTERVAL '1' MINUTE AND a.ts;
"""


def test_a_star_over_a_join_gives_flinks_columns(tmp_path):
    """Flink's `*` over a join is every column of both sides, the right side's keys too, a name taken before with
    Calcite's suffix (k0, ts0); `b.*` is b's columns (it was every column of the join, the right key left out)."""
    c = _check(tmp_path, JOINED)
    assert _codes(c) == []
    fields = {s.id: s.model_dump().get("fields") for s in c.pipeline.components()}
    # a LEFT join pads b: its key is NULL in a row without a match, as in Flink
    assert fields["v"] == ["k", "x", "ts", "CASE WHEN b_ts IS NULL THEN NULL ELSE k END AS k0", "y", "b_ts AS ts0"]
    assert fields["o_select"] == ["k", "ts", "k0", "ts0"]
    assert fields["o2_select"] == ["k", "y", "b_ts AS ts", "x AS n"]


LOOKUP_STAR = """\
    CREATE TABLE clicks (uid VARCHAR, page VARCHAR, pt AS PROCTIME()) WITH (type = 'file', filePath = 'c.jsonl');
    CREATE TABLE users (user_id VARCHAR, name VARCHAR, PRIMARY KEY (user_id) NOT ENFORCED)
    WITH (type = 'file', filePath = 'users.csv', format = 'csv', header = 'true');
    CREATE TABLE o (uid VARCHAR, page VARCHAR, k VARCHAR, name VARCHAR) WITH (type = 'print');
    INSERT INTO o SELECT * FROM clicks AS c {how}JOIN users FOR SYSTEM_TIME AS OF c.pt AS u ON c.uid = u.user_id;
"""


def test_a_star_over_a_lookup_join_lists_the_tables_key(tmp_path):
    """The table's key is among `*`'s columns as in Flink: it reads the event's column it equals (it was E310 when
    the two are named differently); in a LEFT join, W015 at the `*`: Flink's is NULL in a row without a match."""
    (tmp_path / "users.csv").write_text("user_id,name\nu1,ann\n")
    c = _check(tmp_path, LOOKUP_STAR.format(how=""))
    assert _codes(c) == []
    fields = {s.id: s.model_dump().get("fields") for s in c.pipeline.components()}
    assert fields["o_select"] == ["uid", "page", "uid AS k", "name"]
    c = _check(tmp_path, LOOKUP_STAR.format(how="LEFT "))
    assert _codes(c) == [("W015", 5, 22)]
    assert c.report.warnings[0].message == ("u.user_id of a LEFT lookup join reads the event's uid: in a row no "
                                            "table row matched it is the event's key, Flink's is NULL")
