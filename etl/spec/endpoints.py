"""Checks of the servers and names a pipeline connects to, before anything connects (E102).

A spec's `endpoint_problems()` hook returns them (etl.graph.checks reports each one at its field):

* MySQL host: a host name, an IPv4 address or an IPv6 address, nothing else: a host or a
  database is pasted into a JDBC URL (`jdbc:mysql://host:port/database?...`), where `/`, `?`,
  `&`, `;`, `#`, `@`, spaces... would add parameters (`?allowLocalInfile=true`) or another host.
* MySQL database and table names: plain identifiers (letters, digits, `_`, `$`; `db.table` for a
  table), at most 64 characters; column names (sink `key`) at most 64 characters, without
  backticks or control characters, not ending in a space.
* Elasticsearch/OpenSearch hosts: `http://` or `https://` URLs with a host name.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit


_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*\Z")
_IDENT = re.compile(r"[A-Za-z0-9_$]{1,64}\Z")
_BAD_COLUMN = re.compile(r"[`\x00-\x1f\x7f]")
# a MySQL JDBC url as Flink's connector takes it: host, port (optional), database; what follows `?` is not read
JDBC_URL = re.compile(r"^jdbc:(?:mysql|mariadb)://([^:/?]+)(?::(\d+))?/([^?]+)")


def host_problem(host: Any) -> str | None:
    if not isinstance(host, str) or not host:
        return "a host is a name or an address"
    if len(host) <= 253 and _HOST.match(host):
        return None
    try:
        ipaddress.ip_address(host.strip("[]") if host.startswith("[") and host.endswith("]") else host)
        return None
    except ValueError:
        pass
    bad = next((c for c in host if not (c.isalnum() or c in ".-")), None)
    return f"not a host name or address (character {bad!r})" if bad else "not a host name or address"


def identifier_problem(name: Any, dotted: bool = False) -> str | None:
    parts = name.split(".") if isinstance(name, str) and dotted else [name]
    if len(parts) > 2 or not all(isinstance(p, str) and _IDENT.match(p) for p in parts):
        return "use letters, digits, '_' and '$' (at most 64 characters" + (", 'database.table'" if dotted else "") + ")"
    return None


def column_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name or len(name) > 64 or name.endswith(" ") or _BAD_COLUMN.search(name):
        return "a MySQL column name has 1 to 64 characters, no backtick or control character, no trailing space"
    return None


def es_host_problem(url: Any) -> str | None:
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        port = parts.port if parts is not None else None  # noqa: F841 - raises on a bad port
    except ValueError as e:
        return f"not a URL: {e}"
    if parts is None or parts.scheme.lower() not in ("http", "https"):
        scheme = f"'{parts.scheme}:'" if parts is not None and parts.scheme else "no scheme"
        return f"only http:// and https:// hosts are allowed ({scheme})"
    if not parts.hostname or host_problem(parts.hostname):
        return "the URL has no valid host name"
    if parts.query or parts.fragment:
        return "a host URL takes no query or fragment"
    return None


Problem = tuple[tuple, object, str]  # (keys of the field, its value, why it is refused)


def mysql_problems(spec: Any) -> list[Problem]:
    """What is wrong with a mysql source's or sink's host, port, database, table and key columns."""
    out: list[Problem] = []
    for keys, value, why in (
            (("host",), spec.host, host_problem(spec.host)),
            (("database",), spec.database, identifier_problem(spec.database)),
            (("table",), spec.table, spec.table is not None and identifier_problem(spec.table, dotted=True))):
        if why:
            out.append((keys, value, why))
    if not 1 <= int(spec.port) <= 65535:
        out.append((("port",), spec.port, "a port is between 1 and 65535"))
    for i, col in enumerate(getattr(spec, "key", None) or []):
        why = column_problem(col)
        if why:
            out.append((("key", i), col, why))
    return out


def es_problems(spec: Any) -> list[Problem]:
    """What is wrong with an elasticsearch sink's hosts."""
    return [(("hosts", i), url, why) for i, url in enumerate(spec.hosts) if (why := es_host_problem(url))]
