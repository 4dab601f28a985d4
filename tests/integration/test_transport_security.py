"""Transport security against real servers: Kafka with SASL/SCRAM, MariaDB accepting TLS only.

* kafka: a pipeline reads a SASL listener with etl's kafka source and writes to it with etl's kafka
  sink, with one `security:` block shape on both; the SCRAM password holds a quote, a backslash and
  a non-ASCII letter, so the Java client's JAAS quoting is exercised. A wrong password is E407 on
  `security` (one line and a hint) within seconds, at start for the source and as a terminal
  (not retried) error for the sink.
* mariadb: sink and both source readers (PyMySQL, Spark JDBC) over TLS with `verify_ca` against the
  test CA; a wrong CA and a plain connection are E407 / terminal errors with a hint.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.contract.harness import pipeline_text, plan_of, run_once  # noqa: E402
from tests.servers.kafka_sasl import PASSWORD, USER  # noqa: E402

pytestmark = [pytest.mark.servers, pytest.mark.spark, pytest.mark.timeout(600)]


def _security(password: str = PASSWORD, mechanism: str = "SCRAM-SHA-512") -> dict:
    return {"protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism, "username": USER, "password": password}


def _sink_failure(sink: dict, tmp_path: Path, within: float = 10.0) -> str:
    """The SinkFailed message of the sink's first server call (the commit check), raised within `within` s."""
    from etl import registry
    from etl.runtime.sink import SinkContext, SinkFailed

    spec = registry.lookup("sink", sink["type"]).spec.model_validate({"id": "out", "inputs": ["e"], **sink})
    built = registry.builder_for(spec)(spec, SinkContext("p", "out", "q", str(tmp_path), str(tmp_path),
                                                         where="p.yaml:5:5"))
    t0 = time.monotonic()
    with pytest.raises(SinkFailed) as failed:
        built.is_committed(0)
    assert time.monotonic() - t0 < within
    return str(failed.value)


def _consume(bootstrap: str, topic: str, n: int, timeout: float = 30.0) -> list[str]:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe([topic])
    out: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value().decode())
    finally:
        c.close()
    return out


# ----------------------------------------------------------------------------- kafka SASL/SCRAM
def test_kafka_source_and_sink_over_sasl_scram(spark, kafka_sasl_server, tmp_path):
    from confluent_kafka import Producer

    s = kafka_sasl_server
    src_topic, out_topic = f"sasl_in_{uuid.uuid4().hex[:6]}", f"sasl_out_{uuid.uuid4().hex[:6]}"
    s.create_topic(src_topic)
    s.create_topic(out_topic)
    # written over the SASL listener too (librdkafka with the same credentials)
    p = Producer({"bootstrap.servers": s.sasl_bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": USER, "sasl.password": PASSWORD})
    for i in range(12):
        p.produce(src_topic, value=json.dumps({"id": i, "name": f"n{i}"}))
    assert p.flush(30) == 0
    src = {"type": "kafka", "bootstrap_servers": s.sasl_bootstrap_servers, "topics": [src_topic],
           "schema": {"id": "bigint", "name": "string"}, "security": _security(mechanism="SCRAM-SHA-256")}
    sink = {"type": "kafka", "bootstrap_servers": s.sasl_bootstrap_servers, "topic": out_topic, "key": "name",
            "security": _security()}
    run_once(spark, tmp_path, pipeline_text("kafka-sasl", src, sink))
    got = sorted(json.loads(v)["id"] for v in _consume(s.bootstrap_servers, out_topic, 12))
    assert got == list(range(12))


def test_kafka_wrong_password_is_e407_on_security_within_seconds(spark, kafka_sasl_server, tmp_path):
    from etl.compile.context import CompileError
    from etl.runtime.runner import PipelineRun, RunOptions

    s = kafka_sasl_server
    src = {"type": "kafka", "bootstrap_servers": s.sasl_bootstrap_servers, "topics": ["x"], "format": "text",
           "security": _security("not-the-password")}
    plan = plan_of(tmp_path, pipeline_text("kafka-sasl-bad", src, {"type": "file", "path": "out"}))
    run = PipelineRun(plan, spark, RunOptions(once=True, progress="none"))
    t0 = time.monotonic()
    with pytest.raises(CompileError) as err:
        run.start()
    took = time.monotonic() - t0
    run.close()
    text = err.value.diagnostic(plan.graph).render()
    line, hint = text.splitlines()
    yaml_line = (tmp_path / "p.yaml").read_text().splitlines()[2]
    col = yaml_line.index('"security": ') + len('"security": ') + 1  # the value of `security`
    assert line == (f"{tmp_path / 'p.yaml'}:3:{col}: E407 kafka source 'events': Kafka at {s.sasl_bootstrap_servers} refused the "
                    "connection: SASL authentication error: Authentication failed during authentication due to "
                    "invalid credentials with SASL mechanism SCRAM-SHA-512"), text
    assert hint.strip() == ("hint: check security (protocol, sasl_mechanism, username, password, ca_file) "
                            "against the broker's listener")
    assert "not-the-password" not in text and took < 8, took

    failed = _sink_failure({"type": "kafka", "bootstrap_servers": s.sasl_bootstrap_servers, "topic": "y",
                            "security": _security("wrong")}, tmp_path)
    assert failed.startswith(f"kafka sink 'out' (p.yaml:5:5): commit check failed: Kafka at "
                             f"{s.sasl_bootstrap_servers} refused the connection: SASL authentication error: "), failed
    assert failed.endswith("(terminal error, not retried)"), failed


def test_kafka_start_up_check_takes_java_named_options(kafka_sasl_server):
    """The probe's case: SASL given in `options` with Java client names and the `kafka.` prefix."""
    from etl.connectors.kafka_security import jaas_config
    from etl.components.sources.kafka.build import check_reachable, client_conf
    from etl.components.sources.kafka.spec import KafkaSource

    s = kafka_sasl_server

    def check(password: str):
        spec = KafkaSource.model_validate({
            "id": "k", "type": "kafka", "bootstrap_servers": s.sasl_bootstrap_servers, "topics": ["t"],
            "options": {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-256",
                        "kafka.sasl.jaas.config": jaas_config("SCRAM-SHA-256", USER, password),
                        "kafka.max.poll.records": "100"}})
        conf, complete = client_conf(spec)
        assert complete
        return check_reachable(s.sasl_bootstrap_servers, timeout=8.0, conf=conf)

    assert check(PASSWORD) is None
    t0 = time.monotonic()
    bad = check("wrong")
    assert bad is not None and bad.auth and time.monotonic() - t0 < 5
    assert bad.reason == ("SASL authentication error: Authentication failed during authentication due to invalid "
                          "credentials with SASL mechanism SCRAM-SHA-256")


# ----------------------------------------------------------------------------- mariadb TLS
def _mysql(server, table: str, tls: dict | None) -> dict:
    out = {"type": "mysql", "host": server.host, "port": server.port, "user": server.user,
           "password": server.password, "database": server.database, "table": table}
    return {**out, "tls": tls} if tls is not None else out


def test_mysql_sink_and_sources_over_tls_verify_ca(spark, mariadb_tls_server, tmp_path):
    from etl.components.sources.mysql.build import read_mysql_jdbc, read_mysql_table
    from etl.components.sources.mysql.spec import MySQLSource

    s = mariadb_tls_server
    table = f"tls_{uuid.uuid4().hex[:8]}"
    tls = {"mode": "verify_ca", "ca_file": s.certs.ca}
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(json.dumps({"k": i, "v": f"v{i}"}) + "\n" for i in range(5)))
    src = {"type": "file", "path": str(folder), "schema": {"k": "bigint", "v": "string"}}
    run_once(spark, tmp_path / "run", pipeline_text(f"tls-{table}", src,
                                                      {**_mysql(s, table, tls), "create_table": True, "key": ["k"]}))
    spec = MySQLSource.model_validate({"id": "dim", **_mysql(s, table, tls), "schema": {"k": "bigint",
                                                                                          "v": "string"}})
    assert sorted(read_mysql_table(spec).to_pylist(), key=lambda r: r["k"]) == [
        {"k": i, "v": f"v{i}"} for i in range(5)]
    assert sorted((r.k, r.v) for r in read_mysql_jdbc(spark, spec).collect()) == [(i, f"v{i}") for i in range(5)]


def test_mysql_wrong_ca_or_plain_connection_is_e407(spark, mariadb_tls_server, tmp_path):
    from etl.compile.context import CompileContext, CompileError
    from etl.components.sources.mysql.build import MySQLReadError, build, read_mysql_table

    s = mariadb_tls_server
    wrong = {"mode": "verify_ca", "ca_file": s.certs.other_ca}
    lookup = {"id": "enrich", "type": "lookup", "input": "events", "table": "dim", "on": {"k": "k"}}
    text = "\n".join([
        "name: tls-bad",
        "sources:",
        "  - " + json.dumps({"id": "events", "type": "file", "path": "in", "schema": {"k": "bigint"}}),
        "  - " + json.dumps({"id": "dim", **_mysql(s, "t", wrong), "schema": {"k": "bigint"}}),
        "transforms:",
        "  - " + json.dumps(lookup),
        "sinks:",
        "  - " + json.dumps({"id": "out", "input": "enrich", "type": "file", "path": "out"}),
    ]) + "\n"
    plan = plan_of(tmp_path, text)
    node = plan.graph.nodes["dim"]
    t0 = time.monotonic()
    with pytest.raises(CompileError) as err:  # the Spark JDBC reader (Connector/J)
        build(CompileContext(spark, plan.graph), node)
    rendered = err.value.diagnostic(plan.graph).render()
    first, hint = rendered.splitlines()
    yaml_line = (tmp_path / "p.yaml").read_text().splitlines()[3]
    col = yaml_line.index('"tls": ') + len('"tls": ') + 1
    assert first == (f"{tmp_path / 'p.yaml'}:4:{col}: E407 mysql source 'dim' (root@127.0.0.1:{s.port}/etl_test): "
                     f"Could not connect to 127.0.0.1:{s.port} : PKIX path building failed: unable to find valid "
                     "certification path to requested target"), rendered
    assert hint.strip() == ("hint: check `tls` (mode, ca_file: the CA that signed the server's certificate) "
                            "against the server")
    assert s.password not in rendered and time.monotonic() - t0 < 15

    with pytest.raises(MySQLReadError) as read_err:  # PyMySQL (lookup reader)
        read_mysql_table(node.spec)
    assert str(read_err.value).endswith(
        "cannot connect: TLS handshake failed: self-signed certificate in certificate chain; "
        "check `tls` (mode, ca_file: the CA that signed the server's certificate) against the server"), read_err.value
    assert not read_err.value.transient

    import dataclasses

    plain = dataclasses.replace(node, spec=node.spec.model_copy(update={"tls": None}))
    with pytest.raises(CompileError) as err:  # Connector/J without TLS: the server refuses the login
        build(CompileContext(spark, plan.graph), plain)
    assert err.value.message.endswith("Access denied for user 'root'@'127.0.0.1' (using password: YES)") and \
        err.value.hint == "check user and password (or the server accepts TLS connections only: set `tls`)", \
        (err.value.message, err.value.hint)

    assert _sink_failure(_mysql(s, "t", wrong), tmp_path) == (
        f"mysql sink 'out' (p.yaml:5:5): commit check failed: cannot connect to root@127.0.0.1:{s.port}/etl_test: "
        "TLS handshake failed: self-signed certificate in certificate chain; check `tls` "
        "(mode, ca_file: the CA that signed the server's certificate) against the server (terminal error, "
        "not retried)")
    plain = _sink_failure(_mysql(s, "t", {"mode": "disabled"}), tmp_path)
    assert "(MySQL error 1045); check user and password (or the server accepts TLS connections only: set `tls`)" \
        in plain and plain.endswith("(terminal error, not retried)"), plain
