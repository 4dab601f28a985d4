"""MariaDB server from Debian packages (scripts/setup-servers.sh), fresh datadir."""

from __future__ import annotations

import getpass
import shutil
import subprocess
from pathlib import Path

from ._base import ManagedProcess, Server, ServerStartError, _NotReady, free_port

_SBIN = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")


def _find(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        for d in _SBIN:
            candidate = Path(d) / name
            if candidate.exists():
                return str(candidate)
    raise ServerStartError(
        f"{'/'.join(names)} not found: run scripts/setup-servers.sh (apt-get install mariadb-server)"
    )


class MariaDBServer(Server):
    """``mariadbd`` on 127.0.0.1:<port> with a socket in the work dir.

    ``user``/``password`` (root over TCP from 127.0.0.1) and an empty
    ``database`` are created on first start; the datadir survives
    stop()/start().
    """

    name = "mariadb"
    start_timeout = 60.0

    def __init__(
        self,
        workdir=None,
        *,
        port: int | None = None,
        password: str = "etl-test",
        database: str = "etl_test",
        buffer_pool: str = "128M",
    ) -> None:
        super().__init__(workdir)
        self.port = port or free_port()
        self.user = "root"
        self.password = password
        self.database = database
        self.buffer_pool = buffer_pool
        self.datadir = self.workdir / "data"
        self.socket = self.workdir / "mysqld.sock"
        self._bootstrapped_marker = self.workdir / ".bootstrapped"

    host = "127.0.0.1"

    def info(self) -> dict[str, object]:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "database": self.database,
            "jdbc_url": self.jdbc_url,
        }

    @property
    def jdbc_url(self) -> str:
        """URL for Spark's JDBC source/sink with driver org.mariadb.jdbc.Driver.

        Spark picks its SQL dialect from the URL prefix and only knows
        ``jdbc:mysql``: with ``jdbc:mariadb`` it falls back to the generic
        dialect, quotes identifiers with double quotes and MariaDB rejects the
        DDL. MariaDB Connector/J accepts the mysql scheme with
        ``permitMysqlScheme``.
        """
        return f"jdbc:mysql://{self.host}:{self.port}/{self.database}?permitMysqlScheme"

    @property
    def mariadb_jdbc_url(self) -> str:
        """Native ``jdbc:mariadb`` URL (for non-Spark JDBC users)."""
        return f"jdbc:mariadb://{self.host}:{self.port}/{self.database}"

    def connect(self, database: str | None = None, **kwargs):
        """A pymysql connection over TCP as root (autocommit off)."""
        import pymysql

        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=self.database if database is None else database,
            connect_timeout=5,
            **kwargs,
        )

    def _launch(self) -> None:
        mariadbd = _find("mariadbd", "mysqld")
        os_user = getpass.getuser()
        log = self.workdir / "mariadb.log"
        if not (self.datadir / "mysql").is_dir():
            install_db = _find("mariadb-install-db", "mysql_install_db")
            shutil.rmtree(self.datadir, ignore_errors=True)
            argv = [
                install_db,
                "--no-defaults",
                f"--user={os_user}",
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
            ]
            with open(log, "ab") as out:
                done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=120)
            if done.returncode != 0:
                raise ServerStartError(f"mariadb-install-db failed with code {done.returncode}")
        (self.workdir / "tmp").mkdir(exist_ok=True)
        argv = [
            mariadbd,
            "--no-defaults",
            f"--user={os_user}",
            f"--datadir={self.datadir}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.socket}",
            f"--pid-file={self.workdir / 'mariadbd.pid'}",
            f"--tmpdir={self.workdir / 'tmp'}",
            "--skip-name-resolve",
            f"--innodb-buffer-pool-size={self.buffer_pool}",
            "--innodb-log-file-size=32M",
            "--innodb-flush-log-at-trx-commit=2",
            "--innodb-use-native-aio=0",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_unicode_ci",
            "--default-time-zone=+00:00",
            "--max-connections=200",
            "--skip-log-bin",
            *self._extra_args(),
        ]
        self.proc = self._spawn(ManagedProcess("mariadbd", argv, log, cwd=self.workdir))

    def _extra_args(self) -> list[str]:
        return []

    def _probe(self) -> None:
        if not self.socket.exists():
            raise _NotReady("socket not created yet")
        if not self._bootstrapped_marker.exists():
            self._bootstrap()
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
                if cur.fetchone() != (1,):
                    raise _NotReady("SELECT 1 did not return 1")
        finally:
            conn.close()

    def _bootstrap(self) -> None:
        """Once per datadir: root password, root@127.0.0.1 over TCP, test database."""
        import pymysql

        conn = pymysql.connect(unix_socket=str(self.socket), user="root", password="", connect_timeout=5)
        pw = conn.escape(self.password)  # quoted literal
        try:
            with conn.cursor() as cur:
                for sql in (
                    "DELETE FROM mysql.global_priv WHERE User = ''",
                    f"ALTER USER 'root'@'localhost' IDENTIFIED BY {pw}",
                    f"CREATE OR REPLACE USER 'root'@'127.0.0.1' IDENTIFIED BY {pw}",
                    "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
                    f"CREATE DATABASE IF NOT EXISTS `{self.database}`",
                    "FLUSH PRIVILEGES",
                ):
                    cur.execute(sql)
            conn.commit()
        finally:
            conn.close()
        self._bootstrapped_marker.write_text("ok\n")



class MariaDBTLSServer(MariaDBServer):
    """MariaDB that accepts TLS connections only (``require_secure_transport=ON``), with a certificate
    signed by a throw-away CA (``certs``: tests/servers/tls.py; ``certs.ca`` verifies it)."""

    name = "mariadb-tls"

    def __init__(self, workdir=None, **kwargs) -> None:
        super().__init__(workdir, **kwargs)
        from .tls import make_certs

        self.certs = make_certs(self.workdir / "certs")

    def info(self) -> dict[str, object]:
        return {**super().info(), "ca": self.certs.ca}

    def _extra_args(self) -> list[str]:
        c = self.certs
        return [f"--ssl-ca={c.ca}", f"--ssl-cert={c.server_cert}", f"--ssl-key={c.server_key}",
                "--require-secure-transport=ON"]

    def connect(self, database: str | None = None, **kwargs):
        return super().connect(database, ssl_ca=self.certs.ca, **kwargs)
