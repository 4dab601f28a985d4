"""A kafka `security:` block (etl.spec.transport.KafkaSecurity) as client settings, for both Kafka clients etl uses.

* `spark_options`: Spark's Kafka source (the Java client): `kafka.security.protocol`,
  `kafka.sasl.mechanism`, `kafka.sasl.jaas.config` (built from username and
  password, quoted for Java's JAAS parser), PEM trust store / key store.
* `librdkafka_conf`: confluent-kafka (the kafka sink, the source's start-up
  check): `security.protocol`, `sasl.mechanisms`, `sasl.username`,
  `sasl.password`, `ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`.
* `translate_options`: `options` written with Java client names (with or without
  the `kafka.` prefix: `sasl.jaas.config`, `sasl.mechanism`, a PEM trust store)
  as librdkafka settings, so the same names work for source, sink and check.

Only librdkafka names that are safe to pass through are kept; `complete` says
whether the connection settings could all be translated (else the start-up
check falls back to a TCP connect).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from collections.abc import Callable

_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
            "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
            "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}
# Java client settings librdkafka also understands under the same name (or a translated one)
_PASS = ("security.protocol", "sasl.username", "sasl.password", "sasl.mechanisms", "ssl.ca.location",
         "ssl.certificate.location", "ssl.key.location", "ssl.key.password", "client.id", "socket.timeout.ms",
         "ssl.endpoint.identification.algorithm", "enable.ssl.certificate.verification", "ssl.ca.pem",
         "ssl.certificate.pem", "ssl.key.pem", "broker.address.family")
_JAVA_ONLY = ("ssl.truststore.", "ssl.keystore.type", "ssl.keystore.key", "ssl.keystore.certificate.chain")


def _quote(value: str) -> str:
    """A double-quoted string for Java's StreamTokenizer (which Kafka's JaasConfig uses)."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def jaas_config(mechanism: str, username: str, password: str) -> str:
    return f"{_MODULES[mechanism]} required username={_quote(username)} password={_quote(password)};"


def _unquote(body: str) -> str:
    def one(m: re.Match) -> str:
        esc = m.group(1)
        if esc[0] in "01234567":
            return chr(int(esc, 8))
        return _UNESCAPES.get(esc, esc)

    return re.sub(r"\\([0-7]{1,3}|.)", one, body, flags=re.S)


def parse_jaas(text: str) -> dict[str, str]:
    """username/password of a PLAIN or SCRAM login module line (empty when it is another module)."""
    if not any(m in text for m in set(_MODULES.values())):
        return {}
    pairs = {k: _unquote(v) for k, v in re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', text, flags=re.S)}
    return {k: pairs[k] for k in ("username", "password") if k in pairs}


def _resolver(base_dir: str | None) -> Callable[[str], str]:
    def resolve(path: str) -> str:
        p = Path(path).expanduser()
        return str(p if p.is_absolute() or base_dir is None else (Path(base_dir) / p).resolve())

    return resolve


def spark_options(sec: Any, base_dir: str | None = None) -> dict[str, str]:
    """`kafka.`-prefixed options of Spark's Kafka source for a KafkaSecurity."""
    if sec is None:
        return {}
    resolve = _resolver(base_dir)
    out = {"kafka.security.protocol": sec.protocol}
    if sec.sasl:
        out["kafka.sasl.mechanism"] = sec.sasl_mechanism
        out["kafka.sasl.jaas.config"] = jaas_config(sec.sasl_mechanism, sec.username, sec.password)
    if sec.ca_file is not None:
        out["kafka.ssl.truststore.type"] = "PEM"
        out["kafka.ssl.truststore.location"] = resolve(sec.ca_file)
    if sec.cert_file is not None:
        # the Java client reads a PEM key store as text (key: unencrypted PKCS#8)
        out["kafka.ssl.keystore.type"] = "PEM"
        out["kafka.ssl.keystore.certificate.chain"] = Path(resolve(sec.cert_file)).read_text()
        out["kafka.ssl.keystore.key"] = Path(resolve(sec.key_file)).read_text()
    return out


def librdkafka_conf(sec: Any, base_dir: str | None = None) -> dict[str, str]:
    """confluent-kafka settings for a KafkaSecurity."""
    if sec is None:
        return {}
    resolve = _resolver(base_dir)
    out = {"security.protocol": sec.protocol.lower()}
    if sec.sasl:
        out.update({"sasl.mechanisms": sec.sasl_mechanism, "sasl.username": sec.username,
                    "sasl.password": sec.password})
    for field, key in (("ca_file", "ssl.ca.location"), ("cert_file", "ssl.certificate.location"),
                       ("key_file", "ssl.key.location")):
        if getattr(sec, field) is not None:
            out[key] = resolve(getattr(sec, field))
    return out


def translate_options(options: dict[str, str], *, keep_unknown: bool) -> tuple[dict[str, str], bool]:
    """(librdkafka settings, complete) for `options` in Java or librdkafka names, `kafka.` prefix or not.

    keep_unknown: pass every other setting on as it is (the sink's producer); else keep only the
    connection settings librdkafka shares with the Java client (the source's start-up check)."""
    plain = {(k[len("kafka."):] if k.startswith("kafka.") else k): str(v) for k, v in options.items()}
    out: dict[str, str] = {}
    complete = True
    for k, v in plain.items():
        if k == "sasl.mechanism":
            out["sasl.mechanisms"] = v
        elif k == "sasl.jaas.config":
            creds = parse_jaas(v)
            if len(creds) == 2:
                out["sasl.username"], out["sasl.password"] = creds["username"], creds["password"]
            else:
                complete = False
        elif k == "ssl.truststore.location":
            if plain.get("ssl.truststore.type", "").upper() == "PEM":
                out["ssl.ca.location"] = v
            else:
                complete = False  # a JKS / PKCS12 trust store: librdkafka cannot read it
        elif k.startswith(("ssl.keystore.location", "ssl.keystore.password")) and keep_unknown:
            out[k] = v  # librdkafka reads a PKCS#12 key store too
        elif k.startswith(("ssl.keystore.location", "ssl.keystore.key")):
            complete = False  # a client certificate the check cannot present
        elif k.startswith(_JAVA_ONLY):
            continue
        elif k == "ssl.endpoint.identification.algorithm":
            out[k] = v or "none"
        elif keep_unknown or k in _PASS:
            out[k] = v
    return out, complete

