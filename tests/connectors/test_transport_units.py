"""Transport security settings without servers: spec checks, the mappings onto each client, explain, HTTPS.

The elasticsearch sink's CA and client certificate are checked against a local HTTPS `_bulk`
endpoint that demands a client certificate (certificates made with openssl, tests/servers/tls.py).
"""

from __future__ import annotations

import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pyarrow as pa
import pytest

from etl.check import check_file
from etl.connectors.kafka_security import jaas_config, librdkafka_conf, parse_jaas, spark_options, translate_options
from etl.connectors.mysql_conn import ConnectionSettingsError, connect_kwargs, jdbc_properties, jdbc_url
from etl.components.sinks.kafka.spec import KafkaSink
from etl.components.sources.kafka.spec import KafkaSource
from etl.spec.transport import KafkaSecurity, MySQLTLS

SASL = {"protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "username": "etl", "password": 'p"w\\d\n',
        "ca_file": "certs/ca.pem"}


def _diags(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "p.yaml").write_text(text)
    return [d.render().splitlines()[0].replace(str(tmp_path) + "/", "") for d in check_file(tmp_path / "p.yaml")
            .report.sorted()]


def test_security_and_tls_blocks_are_checked_at_their_line(tmp_path):
    text = """name: sec
sources:
  - {id: events, type: kafka, bootstrap_servers: "h:1", topics: [a], format: text,
     security: {protocol: SASL_PLAINTEXT, username: etl}}
sinks:
  - {id: out, input: events, type: kafka, bootstrap_servers: "h:1", topic: b,
     security: {protocol: PLAINTEXT}, options: {kafka.sasl.jaas.config: x, ssl.ca.location: y}}
  - {id: db, input: events, type: mysql, database: d, user: u, table: t, tls: {mode: disabled, ca_file: x.pem}}
  - {id: db2, input: events, type: mysql, database: d, user: u, table: t2, tls: {mode: required, cert_file: c}}
  - {id: es, input: events, type: elasticsearch, hosts: ["https://h:9200"], index: i, key_file: k}
"""
    assert _diags(tmp_path, text) == [
        "p.yaml:4:16: E104 protocol SASL_PLAINTEXT needs sasl_mechanism, password (in source 'events' (security))",
        "p.yaml:6:5: E104 `options` sets kafka.sasl.jaas.config, ssl.ca.location, which `security` sets: give "
        "SASL/TLS settings in one place (in sink 'out')",
        "p.yaml:8:79: E104 ca_file needs TLS: mode is disabled (in sink 'db' (tls))",
        "p.yaml:9:81: E104 give `cert_file` and `key_file` together (a client certificate needs its key) "
        "(in sink 'db2' (tls))",
        "p.yaml:10:5: E104 give `cert_file` and `key_file` together (a client certificate needs its key) "
        "(in sink 'es')",
    ]
    with pytest.raises(ValueError, match="sasl_mechanism, username, password need a SASL protocol"):
        KafkaSecurity(protocol="SSL", sasl_mechanism="PLAIN", username="u", password="p")
    with pytest.raises(ValueError, match="ca_file needs a TLS protocol .SSL or SASL_SSL., not SASL_PLAINTEXT"):
        KafkaSecurity(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", username="u", password="p", ca_file="c")
    assert "password" not in repr(KafkaSecurity(**SASL))


def test_kafka_security_maps_onto_spark_and_librdkafka(tmp_path):
    sec = KafkaSecurity(**SASL)
    assert spark_options(sec, "/base") == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="etl" password="p\\"w\\\\d\\n";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/base/certs/ca.pem",
    }
    assert librdkafka_conf(sec, "/base") == {
        "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "etl",
        "sasl.password": 'p"w\\d\n', "ssl.ca.location": "/base/certs/ca.pem"}
    (tmp_path / "c.pem").write_text("CERT")
    (tmp_path / "k.pem").write_text("KEY")
    mtls = KafkaSecurity(protocol="SSL", ca_file="/ca.pem", cert_file="c.pem", key_file="k.pem")
    assert spark_options(mtls, str(tmp_path)) == {
        "kafka.security.protocol": "SSL", "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location":
        "/ca.pem", "kafka.ssl.keystore.type": "PEM", "kafka.ssl.keystore.certificate.chain": "CERT",
        "kafka.ssl.keystore.key": "KEY"}
    assert librdkafka_conf(mtls, str(tmp_path)) == {
        "security.protocol": "ssl", "ssl.ca.location": "/ca.pem", "ssl.certificate.location": f"{tmp_path}/c.pem",
        "ssl.key.location": f"{tmp_path}/k.pem"}
    # source and sink take the same block; the source's Spark options carry it
    src = KafkaSource.model_validate({"id": "s", "type": "kafka", "bootstrap_servers": "h:1", "topics": ["t"],
                                      "security": SASL, "options": {"fetch.max.bytes": "10"}})
    KafkaSink.model_validate({"id": "k", "type": "kafka", "inputs": ["s"], "bootstrap_servers": "h:1", "topic": "t",
                              "security": SASL})
    from etl.components.sources.kafka.build import consumer_options

    opts = consumer_options(src, "/base")
    assert opts["kafka.sasl.jaas.config"].endswith('password="p\\"w\\\\d\\n";') and opts["kafka.fetch.max.bytes"] == "10"


def test_jaas_quoting_round_trips_and_java_named_options_translate():
    for pw in ['p"w\\d', "a\tb\x01c", "wörd 'q'", "\\\\\"", ""]:
        assert parse_jaas(jaas_config("PLAIN", "u=1,x", pw)) == {"username": "u=1,x", "password": pw}
    assert jaas_config("PLAIN", "u", "a\x01") == ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                                                 'username="u" password="a\\001";')
    java = {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.sasl.jaas.config": jaas_config("SCRAM-SHA-256", "etl", 'x"y'),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": "/ca.pem", "max.poll.records": "5",
            "ssl.endpoint.identification.algorithm": ""}
    assert translate_options(java, keep_unknown=False) == ({
        "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "etl",
        "sasl.password": 'x"y', "ssl.ca.location": "/ca.pem", "ssl.endpoint.identification.algorithm": "none"},
        True)
    assert translate_options(java, keep_unknown=True)[0]["max.poll.records"] == "5"
    # what librdkafka cannot express leaves the start-up check a TCP connect
    assert translate_options({"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                              "OAuthBearerLoginModule required;"}, keep_unknown=False) == ({}, False)
    assert translate_options({"ssl.truststore.location": "/t.jks"}, keep_unknown=False) == ({}, False)
    assert translate_options({"ssl.keystore.location": "/k.jks"}, keep_unknown=False) == ({}, False)
    # the sink's options are librdkafka names: its PKCS#12 key store passes, Java-only PEM fields do not
    assert translate_options({"ssl.keystore.location": "/k.p12", "ssl.keystore.password": "x",
                              "ssl.keystore.type": "PEM", "linger.ms": "1"}, keep_unknown=True) == (
        {"ssl.keystore.location": "/k.p12", "ssl.keystore.password": "x", "linger.ms": "1"}, True)


def test_start_up_check_is_bounded_and_falls_back_to_tcp():
    import socket
    import time

    from etl.components.sources.kafka.build import check_reachable

    t0 = time.monotonic()
    bad = check_reachable("127.0.0.1:1", timeout=2.0, conf={"security.protocol": "sasl_plaintext",
                                                           "sasl.mechanisms": "PLAIN", "sasl.username": "u",
                                                           "sasl.password": "p"})
    assert bad is not None and not bad.auth and time.monotonic() - t0 < 4
    assert check_reachable("127.0.0.1:1", timeout=1.0, complete=False) == (
        "127.0.0.1:1: [Errno 111] Connection refused", False)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    try:
        assert check_reachable(f"127.0.0.1:{srv.getsockname()[1]}", timeout=1.0, complete=False) is None
    finally:
        srv.close()
    bad = check_reachable("127.0.0.1:1", conf={"no.such.setting": "1"})
    assert bad is not None and bad.auth and "No such configuration property" in bad.reason


def test_mysql_jdbc_url_is_built_from_checked_parts_and_settings_are_properties():
    assert jdbc_url("db.example.com", 3306, "shop") == "jdbc:mysql://db.example.com:3306/shop?permitMysqlScheme"
    assert jdbc_url("::1", 3307, "a_b$-1") == "jdbc:mysql://[::1]:3307/a_b$-1?permitMysqlScheme"
    for host, db in [("h?allowLocalInfile=true", "d"), ("h", "d?allowLocalInfile=true"), ("h/x", "d"),
                     ("h,evil:1", "d"), ("h", "d&user=x"), ("h", ""), ("", "d"), ("h", "d#x"), ("h h", "d")]:
        with pytest.raises(ConnectionSettingsError):
            jdbc_url(host, 3306, db)
    assert jdbc_properties(None) == {"connectTimeout": "10000", "socketTimeout": "300000"}
    tls = MySQLTLS(mode="verify_ca", ca_file="ca.pem")
    assert jdbc_properties(tls, "/p") == {"connectTimeout": "10000", "socketTimeout": "300000",
                                          "sslMode": "verify-ca", "serverSslCert": "/p/ca.pem"}
    assert jdbc_properties(MySQLTLS(mode="required"))["sslMode"] == "trust"
    assert jdbc_properties(MySQLTLS())["sslMode"] == "verify-full"


def test_mysql_tls_becomes_a_verifying_ssl_context(tmp_path):
    from tests.servers.tls import make_certs

    certs = make_certs(tmp_path / "certs")
    assert connect_kwargs(None) == {}
    assert connect_kwargs(MySQLTLS(mode="disabled")) == {"ssl_disabled": True}
    req = connect_kwargs(MySQLTLS(mode="required"))["ssl"]
    assert (req.verify_mode, req.check_hostname) == (ssl.CERT_NONE, False)
    ca = connect_kwargs(MySQLTLS(mode="verify_ca", ca_file="ca.pem"), str(certs.folder))["ssl"]
    assert (ca.verify_mode, ca.check_hostname) == (ssl.CERT_REQUIRED, False)
    assert [c["subject"] for c in ca.get_ca_certs()] == [((("commonName", "etl test CA"),),)]
    full = connect_kwargs(MySQLTLS(mode="verify_identity", ca_file=certs.ca, cert_file=certs.client_cert,
                                   key_file=certs.client_key))["ssl"]
    assert (full.verify_mode, full.check_hostname) == (ssl.CERT_REQUIRED, True)
    with pytest.raises(ConnectionSettingsError, match="cannot load the TLS files of `tls`: .*No such file"):
        connect_kwargs(MySQLTLS(mode="verify_ca", ca_file="missing.pem"), str(tmp_path))


def test_explain_shows_security_with_the_password_hidden(tmp_path):
    from etl.plan.explain import explain_plan

    text = f"""name: sec
sources:
  - {{id: events, type: kafka, bootstrap_servers: "h:1", topics: [a], format: text, security: {json.dumps(SASL)}}}
sinks:
  - {{id: db, input: events, type: mysql, database: d, user: u, table: t, tls: {{mode: verify_ca, ca_file: c.pem}}}}
  - {{id: es, input: events, type: elasticsearch, hosts: ["https://h:9200"], index: i, verify: false}}
"""
    (tmp_path / "p.yaml").write_text(text)
    out = explain_plan(check_file(tmp_path / "p.yaml").plan)
    assert "    security: SASL_SSL, SCRAM-SHA-512 user etl password ***, ca certs/ca.pem\n" in out
    assert "    tls: verify_ca, ca c.pem\n" in out
    assert "    https: certificate NOT checked (verify: false)\n" in out
    assert 'p"w' not in out


class _Bulk(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        n = body.count("\n") // 2
        out = json.dumps({"errors": False, "items": [{"index": {"status": 201}}] * n}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def test_elasticsearch_ca_and_client_certificate_reach_the_https_client(tmp_path):
    from etl import registry
    from etl.runtime.sink import SinkContext, TerminalError
    from tests.servers.tls import make_certs

    certs = make_certs(tmp_path / "certs")
    server = HTTPServer(("127.0.0.1", 0), _Bulk)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=certs.ca)
    ctx.verify_mode = ssl.CERT_REQUIRED  # the server demands a client certificate signed by the CA
    ctx.load_cert_chain(certs.server_cert, certs.server_key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    table = pa.table({"_id": ["a"], "_doc": ['{"v":1}']})

    def write(**tls) -> None:
        spec = registry.lookup("sink", "elasticsearch").spec.model_validate(
            {"id": "out", "inputs": ["e"], "type": "elasticsearch", "index": "x", "retry": {"max_attempts": 1},
             "hosts": [f"https://127.0.0.1:{server.server_port}"], **tls})
        es = registry.builder_for(spec)(spec, SinkContext("p", "out", "q", str(tmp_path), str(certs.folder)))
        es.begin(0, table.schema)
        es.batch_insert(table)

    try:
        write(ca_file="ca.pem", cert_file="client_cert.pem", key_file="client_key.pem")  # relative to base_dir
        with pytest.raises(TerminalError, match=r"^TLS handshake with https://127.0.0.1:\d+ failed: "
                                                r"self-signed certificate in certificate chain; check ca_file"):
            write(ca_file=certs.other_ca, cert_file=certs.client_cert, key_file=certs.client_key)
        with pytest.raises(TerminalError, match="^TLS handshake with .* failed: self-signed certificate in "):
            write(cert_file=certs.client_cert, key_file=certs.client_key)  # the system CAs do not hold the test CA
        with pytest.raises(Exception, match="(?i)certificate.required|EOF|reset|alert"):
            write(ca_file=certs.ca)  # no client certificate: the server refuses
        write(verify=False, cert_file=certs.client_cert, key_file=certs.client_key)
        with pytest.raises(TerminalError, match=r"cannot load the TLS files \(ca_file, cert_file, key_file\)"):
            write(ca_file="nope.pem")
    finally:
        server.shutdown()
