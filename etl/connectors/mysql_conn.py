"""Connection settings of the mysql source and sink: TLS (etl.spec.transport.MySQLTLS), JDBC URL and properties.

* PyMySQL (sink, lookup reader): `connect_kwargs` gives an `ssl.SSLContext`
  built here, so `verify_ca` really verifies (PyMySQL's own `ssl_ca` alone
  does not) and a server without TLS is refused. No `tls:` keeps PyMySQL's
  default (TLS when the server offers it, unverified); `mode: disabled`
  turns TLS off.
* Spark JDBC (source, MariaDB Connector/J from java/lib/spark): `jdbc_url`
  builds `jdbc:mysql://host:port/database?permitMysqlScheme` from a checked
  host and database name (nothing a pipeline writes can add URL parameters);
  every setting -- timeouts, `sslMode` (disable / trust / verify-ca /
  verify-full), `serverSslCert` (the CA file) -- travels as a driver property.
* `tls_failure`: a refused TLS handshake, as a readable reason (never retried).
"""

from __future__ import annotations

import re
import ssl
from pathlib import Path
from types import MappingProxyType
from typing import Any

_HOST = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]{2,45}\])$")
_IPV6 = re.compile(r"^[0-9A-Fa-f:.]{2,45}$")
_DATABASE = re.compile(r"^[\w$-]{1,64}$")
_SSL_MODES = MappingProxyType({"disabled": "disable", "required": "trust", "verify_ca": "verify-ca",
                               "verify_identity": "verify-full"})
CONNECT_TIMEOUT_MS = 10_000
SOCKET_TIMEOUT_MS = 300_000


class ConnectionSettingsError(ValueError):
    """A host, database name or TLS file that cannot be used (terminal)."""


def _resolve(path: str, base_dir: str | None) -> str:
    p = Path(path).expanduser()
    return str(p if p.is_absolute() or base_dir is None else (Path(base_dir) / p).resolve())


def url_host(host: str) -> str:
    """`host` for a JDBC URL: a host name, IPv4 or IPv6 address, and nothing else."""
    if isinstance(host, str) and _IPV6.match(host) and host.count(":") >= 2:
        return f"[{host}]"
    if not isinstance(host, str) or not _HOST.match(host):
        raise ConnectionSettingsError(f"invalid host {host!r}: expected a host name or an IP address")
    return host


def jdbc_url(host: str, port: int, database: str) -> str:
    """`jdbc:mysql:` so Spark picks its MySQL dialect; MariaDB Connector/J accepts it with permitMysqlScheme."""
    if not isinstance(database, str) or not _DATABASE.match(database):
        raise ConnectionSettingsError(f"invalid database name {database!r}: letters, digits, _, $ and - only")
    port = int(port)
    if not 0 < port < 65536:
        raise ConnectionSettingsError(f"invalid port {port}")
    return f"jdbc:mysql://{url_host(host)}:{port}/{database}?permitMysqlScheme"


def jdbc_properties(tls: Any, base_dir: str | None = None) -> dict[str, str]:
    """Driver properties (Spark JDBC options that are not Spark's own are passed to the driver as-is)."""
    props = {"connectTimeout": str(CONNECT_TIMEOUT_MS), "socketTimeout": str(SOCKET_TIMEOUT_MS)}
    if tls is None:
        return props
    props["sslMode"] = _SSL_MODES[tls.mode]
    if tls.ca_file is not None:
        props["serverSslCert"] = _resolve(tls.ca_file, base_dir)
    return props


def jdbc_supported(tls: Any) -> bool:
    """Connector/J takes a client certificate from a Java key store only: PEM ones go through PyMySQL."""
    return tls is None or tls.cert_file is None


def ssl_context(tls: Any, base_dir: str | None = None) -> ssl.SSLContext:
    """The client side of `tls` (mode other than disabled)."""
    try:
        if tls.mode == "required":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            ca = _resolve(tls.ca_file, base_dir) if tls.ca_file is not None else None
            ctx = ssl.create_default_context(cafile=ca)
            ctx.check_hostname = tls.mode == "verify_identity"
            ctx.verify_mode = ssl.CERT_REQUIRED
        if tls.cert_file is not None:
            ctx.load_cert_chain(_resolve(tls.cert_file, base_dir), _resolve(tls.key_file, base_dir))
    except (OSError, ssl.SSLError) as e:
        raise ConnectionSettingsError(f"cannot load the TLS files of `tls`: {e}") from None
    return ctx


def connect_kwargs(tls: Any, base_dir: str | None = None) -> dict[str, Any]:
    """PyMySQL connect() arguments for `tls`."""
    if tls is None:
        return {}
    if tls.mode == "disabled":
        return {"ssl_disabled": True}
    return {"ssl": ssl_context(tls, base_dir)}


def tls_failure(e: Exception) -> str | None:
    """Why the TLS handshake failed, when that is what `e` (a PyMySQL error) is about."""
    cause = getattr(e, "original_exception", None) or e.__cause__ or e.__context__
    if isinstance(cause, ssl.SSLError):
        return f"TLS handshake failed: {getattr(cause, 'verify_message', None) or cause.reason or cause}"
    code = e.args[0] if e.args and isinstance(e.args[0], int) else None
    if code == 2026:  # CR_SSL_CONNECTION_ERROR: TLS required, the server offers none
        return e.args[1] if len(e.args) > 1 else str(e)
    return None


TLS_HINT = "check `tls` (mode, ca_file: the CA that signed the server's certificate) against the server"
PLAIN_HINT = " (or the server accepts TLS connections only: set `tls`)"
