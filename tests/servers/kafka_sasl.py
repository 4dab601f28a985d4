"""A KRaft Kafka broker with a second client listener that needs SASL/SCRAM (SASL_PLAINTEXT).

``bootstrap_servers`` is the PLAINTEXT listener (admin, topic creation, checking
what a test wrote); ``sasl_bootstrap_servers`` is the SASL listener. SCRAM
users (``users``: name -> password, SCRAM-SHA-256 and -512) are created over
the PLAINTEXT listener once the broker is up; a password may hold quotes,
backslashes and non-ASCII text (it travels through Java's JAAS parser).
"""

from __future__ import annotations

from ._base import _NotReady, free_port
from .kafka import KafkaServer

USER = "etl-user"
PASSWORD = 'p"a\\ss wörd'  # a quote, a backslash, a space and a non-ASCII letter: quoting must hold
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


class KafkaSaslServer(KafkaServer):
    name = "kafka-sasl"

    def __init__(self, workdir=None, *, users: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(workdir, **kwargs)
        self.sasl_port = free_port()
        self.users = dict(users or {USER: PASSWORD})
        self._users_ready = False

    @property
    def sasl_bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def info(self) -> dict[str, object]:
        return {**super().info(), "sasl_bootstrap_servers": self.sasl_bootstrap_servers, "users": sorted(self.users)}

    def _properties(self) -> dict[str, str]:
        props = super()._properties()
        plain, sasl, ctl = self.port, self.sasl_port, self.controller_port
        props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                         f"CONTROLLER://127.0.0.1:{ctl}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                              "CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": _SCRAM,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": _SCRAM,
        })
        return props

    def _probe(self) -> None:
        super()._probe()
        if not self._users_ready:
            self._create_users()
            self._users_ready = True

    def _create_users(self) -> None:
        from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 3})
        try:
            for mech in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):  # one change per user a request
                changes = [UserScramCredentialUpsertion(user, ScramCredentialInfo(mech, 4096), password.encode())
                           for user, password in self.users.items()]
                for future in admin.alter_user_scram_credentials(changes).values():
                    future.result(10)
        except Exception as e:  # noqa: BLE001 - the controller may still be settling: probe again
            raise _NotReady(f"cannot create SCRAM users yet: {e}") from e
