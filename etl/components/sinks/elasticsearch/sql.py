"""rsqldb's and Flink's elasticsearch table options (endPoint/hosts, port, esIndex/index, authUsername ...) -> the
elasticsearch sink (a PRIMARY KEY: the document ids)."""

from __future__ import annotations

import re

from etl.sql.connectors import Mapped, Opts


def map_options(o: Opts, m: Mapped) -> None:
    host = o.get("endPoint", "host", "hosts")
    port = o.get("port")
    if host is None:
        o.require(m, "hosts", "endPoint")
    else:
        h = str(host.value)
        hosts = [x.strip() for x in h.split(",") if x.strip()]
        hosts = [x if "://" in x else f"http://{x}" for x in hosts]
        if port is not None:
            hosts = [x if re.search(r":\d+$", x) else f"{x}:{port.value}" for x in hosts]
        o.put(m, "hosts", hosts, host)
    o.require(m, "index", "esIndex", "index")
    o.copy(m, "username", "authUsername", "username")
    o.copy(m, "password", "authPassword", "password")
    if o.table.primary_key:
        m.spec["id_fields"] = list(o.table.primary_key)
