"""Explain lines for a connector's transport security (`security`, `tls`, HTTPS files); secrets as `***`."""

from __future__ import annotations

from typing import Any


def transport_lines(spec: Any) -> list[str]:
    sec = getattr(spec, "security", None)
    if sec is not None:
        bits = [sec.protocol]
        if sec.sasl:
            bits.append(f"{sec.sasl_mechanism} user {sec.username} password ***")
        bits += [f"{name} {getattr(sec, f)}" for f, name in (("ca_file", "ca"), ("cert_file", "client cert"))
                 if getattr(sec, f) is not None]
        return ["security: " + ", ".join(bits)]
    tls = getattr(spec, "tls", None)
    if tls is not None:
        bits = [tls.mode] + [f"{name} {getattr(tls, f)}" for f, name in (("ca_file", "ca"), ("cert_file", "client cert"))
                             if getattr(tls, f) is not None]
        return ["tls: " + ", ".join(bits)]
    https = getattr(spec, "https_lines", None)  # a spec that did not validate has none
    if https is not None:
        return list(https())
    return []
