"""Throw-away TLS material for the test servers, made with the `openssl` command line.

`make_certs(folder)` writes a CA, a server certificate it signed (for
127.0.0.1 and localhost), a client certificate it signed, and a second,
unrelated CA (a "wrong CA" that verifies nothing). Keys are unencrypted
PKCS#8 PEM, which Python's ssl, MariaDB, librdkafka and the Java client all read.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ._base import ServerStartError


@dataclass(frozen=True)
class Certs:
    folder: Path

    def __getattr__(self, name: str) -> str:  # ca, ca_key, server_cert, server_key, client_cert, client_key, other_ca
        if name.startswith("_"):
            raise AttributeError(name)
        return str(self.folder / f"{name}.pem")


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise ServerStartError("openssl not found: run scripts/setup-servers.sh (apt-get install openssl)")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise ServerStartError(f"openssl {args[0]} failed: {done.stderr.strip()[-500:]}")


def _ca(folder: Path, name: str, subject: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3", "-subj", subject,
             "-keyout", f"{name}_key.pem", "-out", f"{name}.pem", cwd=folder)


def _signed(folder: Path, name: str, subject: str, ext: str) -> None:
    (folder / f"{name}.ext").write_text(ext)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", f"{name}_key.pem",
             "-out", f"{name}.csr", cwd=folder)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca_key.pem", "-CAcreateserial",
             "-days", "3", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}_cert.pem", cwd=folder)


def make_certs(folder: Path) -> Certs:
    """CA, server and client certificates in `folder` (made once; kept when they exist)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "client_cert.pem").exists():
        _ca(folder, "ca", "/CN=etl test CA")
        _ca(folder, "other_ca", "/CN=some other CA")
        _signed(folder, "server", "/CN=127.0.0.1",
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _signed(folder, "client", "/CN=etl client",
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n")
    return Certs(folder)
