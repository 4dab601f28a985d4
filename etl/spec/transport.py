"""Transport security settings shared by the connectors: Kafka SASL/TLS, MySQL TLS, HTTPS client certificates.

One model per transport, the same field names wherever it is used:

* `KafkaSecurity` (`security:` of the kafka source and sink): `protocol`,
  `sasl_mechanism`, `username`, `password`, `ca_file`, `cert_file`,
  `key_file`. The connectors map it onto Spark's Kafka options (Java client
  property names) and onto librdkafka's (confluent-kafka).
* `MySQLTLS` (`tls:` of the mysql source and sink): `mode` disabled / required
  / verify_ca / verify_identity, `ca_file`, `cert_file`, `key_file`.

Paths are files on the machine that runs the pipeline; relative paths start at
the pipeline file's folder. Passwords are never shown (explain prints `***`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from etl.spec.base import Model

_SECURITY_KEYS = ("security.protocol", "sasl.", "ssl.")


def kafka_options_clash(security: KafkaSecurity | None, options: dict[str, str]) -> None:
    """With a `security:` block, `options` may not set SASL/TLS settings too (which one would win?)."""
    if security is None:
        return
    keys = [k for k in options if k.removeprefix("kafka.").startswith(_SECURITY_KEYS)]
    if keys:
        raise ValueError(f"`options` sets {', '.join(sorted(keys))}, which `security` sets: "
                         "give SASL/TLS settings in one place")


def _need(given: list[str]) -> str:
    return f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'}"


class _ClientCert(Model):
    ca_file: str | None = Field(default=None, description="PEM file of the CA(s) that signed the server's certificate")
    cert_file: str | None = Field(default=None, description="PEM client certificate (with `key_file`)")
    key_file: str | None = Field(default=None, description="PEM private key of `cert_file` (unencrypted PKCS#8)")

    def _no_files(self, why: str) -> None:
        given = [k for k in ("ca_file", "cert_file", "key_file") if getattr(self, k) is not None]
        if given:
            raise ValueError(f"{_need(given)} {why}")

    def _check_pair(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("give `cert_file` and `key_file` together (a client certificate needs its key)")


class KafkaSecurity(_ClientCert):
    """How a Kafka client authenticates and encrypts: SASL and/or TLS."""

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        description="security.protocol of the listener")
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = Field(
        default=None, description="SASL_*: the mechanism (SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN)")
    username: str | None = Field(default=None, description="SASL user name")
    password: str | None = Field(default=None, repr=False, description="SASL password (a secret: never shown)")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @model_validator(mode="after")
    def _consistent(self) -> KafkaSecurity:
        if self.sasl:
            missing = [k for k in ("sasl_mechanism", "username", "password") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"protocol {self.protocol} needs {', '.join(missing)}")
        else:
            given = [k for k in ("sasl_mechanism", "username", "password") if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{_need(given)} a SASL protocol (SASL_PLAINTEXT or SASL_SSL), "
                                 f"not {self.protocol}")
        if not self.tls:
            self._no_files(f"a TLS protocol (SSL or SASL_SSL), not {self.protocol}")
        self._check_pair()
        return self


class MySQLTLS(_ClientCert):
    """TLS to a MySQL / MariaDB server."""

    mode: Literal["disabled", "required", "verify_ca", "verify_identity"] = Field(
        default="verify_identity",
        description="required: encrypt, no certificate check; verify_ca: the server's certificate is signed by "
                    "`ca_file` (or a system CA); verify_identity: and names `host`")

    @model_validator(mode="after")
    def _consistent(self) -> MySQLTLS:
        if self.mode == "disabled":
            self._no_files("TLS: mode is disabled")
        self._check_pair()
        return self


class HTTPTLS(_ClientCert):
    """Fields of an HTTPS client: `verify` plus `ca_file`, `cert_file`, `key_file`."""

    verify: bool = Field(default=True, description="check the server's certificate (false: trust any, insecure)")

    @model_validator(mode="after")
    def _consistent(self) -> HTTPTLS:
        self._check_pair()
        return self
