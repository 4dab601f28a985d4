"""RocketMQ name server + broker from java/lib/rocketmq (scripts/setup-java.sh rocketmq).

Readiness is checked over RocketMQ's remoting protocol (the one the Python
``rocketmq`` 0.4.4 client speaks): the name server must list our broker in
its cluster info and have a route for the auto-create template topic TBW102.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from pathlib import Path

from ._base import (
    ManagedProcess,
    Server,
    _NotReady,
    extra_jvm_flags,
    free_port,
    java_binary,
    java_heap_flags,
    java_lib_dir,
    port_open,
    require_dir,
)

UPDATE_BROKER_CONFIG = 25
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106


def remoting_call(
    addr: str,
    code: int,
    ext_fields: dict[str, str] | None = None,
    body: bytes = b"",
    timeout: float = 3.0,
) -> tuple[dict, bytes]:
    """One request/response over RocketMQ remoting (JSON header). Returns (header, body).

    Frame: int32 length | int32 (serialize type << 24 | header length) |
    header JSON | body.
    """
    header = json.dumps(
        {
            "code": code,
            "language": "PYTHON",
            "version": 0,
            "opaque": 1,
            "flag": 0,
            "serializeTypeCurrentRPC": "JSON",
            "extFields": ext_fields or {},
        }
    ).encode()
    frame = struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(frame)
        (length,) = struct.unpack(">I", _recv_exact(sock, 4))
        payload = _recv_exact(sock, length)
    (mark,) = struct.unpack(">I", payload[:4])
    header_len = mark & 0xFFFFFF
    return json.loads(payload[4 : 4 + header_len]), payload[4 + header_len :]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        buf += chunk
    return buf


class RocketMQServer(Server):
    """Name server on ``namesrv_addr`` and one master broker (``broker_name``).

    Topics and subscription groups are auto-created. The broker listens on
    ``broker_port`` plus ``broker_port - 2`` (fast remoting) and
    ``broker_port + 1`` (HA); all three are reserved. The commit log uses
    64 MB files. Data survives stop()/start().
    """

    name = "rocketmq"
    start_timeout = 120.0
    stop_timeout = 40.0

    def __init__(
        self,
        workdir=None,
        *,
        namesrv_port: int | None = None,
        broker_port: int | None = None,
        namesrv_heap: str = "256m",
        broker_heap: str = "1g",
        cluster: str = "DefaultCluster",
        broker_name: str = "broker-a",
        extra_broker_config: dict[str, str] | None = None,
    ) -> None:
        super().__init__(workdir)
        self.namesrv_port = namesrv_port or free_port()
        self.broker_port = broker_port or free_port(span=(-2, 0, 1))
        self.namesrv_heap = namesrv_heap
        self.broker_heap = broker_heap
        self.cluster = cluster
        self.broker_name = broker_name
        self.extra_broker_config = dict(extra_broker_config or {})
        self.store_dir = self.workdir / "store"

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def info(self) -> dict[str, object]:
        return {"namesrv_addr": self.namesrv_addr, "broker_addr": self.broker_addr, "cluster": self.cluster}

    def _broker_config(self) -> dict[str, str]:
        conf = {
            "brokerClusterName": self.cluster,
            "brokerName": self.broker_name,
            "brokerId": "0",
            "brokerRole": "ASYNC_MASTER",
            "namesrvAddr": self.namesrv_addr,
            "listenPort": str(self.broker_port),
            "brokerIP1": "127.0.0.1",
            "storePathRootDir": str(self.store_dir),
            "storePathCommitLog": str(self.store_dir / "commitlog"),
            "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
            "mappedFileSizeConsumeQueue": str(30_000 * 20),
            "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true",
            "flushDiskType": "ASYNC_FLUSH",
            # the default 75% refuses writes on a fuller CI disk
            "diskMaxUsedSpaceRatio": "98",
            # slow CI: avoid "[TIMEOUT_CLEAN_QUEUE] broker busy" rejections
            "waitTimeMillsInSendQueue": "3000",
            "osPageCacheBusyTimeOutMills": "5000",
            "traceTopicEnable": "false",
            # no timer (delayed) messages: its flush thread kept an idle broker at 12% of a core (4.5 CPU-s per
            # 30 s idle, 0.8 without), for the whole test session
            "timerWheelEnable": "false",
        }
        conf.update(self.extra_broker_config)
        return conf

    def _java(self, main: str, heap: str, home: Path, *args: str) -> list[str]:
        lib = require_dir(java_lib_dir() / "rocketmq", "run scripts/setup-java.sh rocketmq")
        return [
            java_binary(),
            *java_heap_flags(heap),
            "-XX:+UseG1GC",
            "-XX:TieredStopAtLevel=1",
            "-XX:MaxDirectMemorySize=512m",
            "-XX:-OmitStackTraceInFastThrow",
            "-Djava.awt.headless=true",
            # logs go to ${user.home}/logs/rocketmqlogs
            f"-Duser.home={home}",
            f"-Drocketmq.home.dir={self.workdir}",
            *extra_jvm_flags(),
            "-cp",
            str(lib / "*"),
            main,
            *args,
        ]

    def _launch(self) -> None:
        env = {**os.environ, "ROCKETMQ_HOME": str(self.workdir)}
        ns_home = self.workdir / "namesrv-home"
        broker_home = self.workdir / "broker-home"
        for d in (ns_home, broker_home, self.store_dir):
            d.mkdir(parents=True, exist_ok=True)
        ns_conf = self.workdir / "namesrv.conf"
        ns_conf.write_text(f"listenPort={self.namesrv_port}\n")
        broker_conf = self.workdir / "broker.conf"
        broker_conf.write_text("".join(f"{k}={v}\n" for k, v in self._broker_config().items()))

        self.namesrv = self._spawn(
            ManagedProcess(
                "namesrv",
                self._java("org.apache.rocketmq.namesrv.NamesrvStartup", self.namesrv_heap, ns_home,
                           "-c", str(ns_conf)),
                self.workdir / "namesrv.log",
                env=env,
                cwd=self.workdir,
            )
        )
        deadline = time.monotonic() + self.start_timeout / 2
        self._wait(self._namesrv_ready, deadline, "name server")
        self.broker = self._spawn(
            ManagedProcess(
                "broker",
                self._java("org.apache.rocketmq.broker.BrokerStartup", self.broker_heap, broker_home,
                           "-c", str(broker_conf)),
                self.workdir / "broker.log",
                env=env,
                cwd=self.workdir,
            )
        )

    def _namesrv_ready(self) -> None:
        if "boot success" not in self.namesrv.new_output():
            raise _NotReady("name server has not logged 'boot success'")
        if not port_open(self.namesrv_port):
            raise _NotReady("name server port closed")

    def _probe(self) -> None:
        if "boot success" not in self.broker.new_output():
            raise _NotReady("broker has not logged 'boot success'")
        header, body = remoting_call(self.namesrv_addr, GET_BROKER_CLUSTER_INFO)
        text = body.decode("utf-8", "replace")
        if header.get("code") != 0 or f'"{self.broker_name}"' not in text or self.broker_addr not in text:
            self._nudge_registration()
            raise _NotReady(f"broker not registered in name server: {header} {text[:300]}")
        header, body = remoting_call(self.namesrv_addr, GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
        if header.get("code") != 0:
            raise _NotReady(f"no route for TBW102 yet: {header.get('remark')}")

    def _nudge_registration(self) -> None:
        """RocketMQ 5.x registers at boot only with name servers its client
        has already marked available (a scan every 3 s); when it loses that
        race the next registration comes 10 s later. Re-setting the default
        brokerPermission makes the broker register again right away."""
        now = time.monotonic()
        if now - getattr(self, "_last_nudge", 0.0) < 1.0:
            return
        self._last_nudge = now
        remoting_call(self.broker_addr, UPDATE_BROKER_CONFIG, body=b"brokerPermission=6\n")

    def _extra_logs(self) -> list[Path]:
        return [self.workdir / "broker-home" / "logs" / "rocketmqlogs" / "broker.log"]
