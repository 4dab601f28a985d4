"""OpenSearch integration-test distribution (scripts/setup-java.sh opensearch).

The integ-test zip has no security plugin (plain HTTP, no auth) and only the
transport-netty4 module: no painless scripts, no analysis-common analyzers,
no ingest processors, no _reindex. Core indexing, _bulk, search and
aggregations work. OpenSearch refuses to run as root, so when the tests run
as root it is started as ``nobody`` (override: ETL_TEST_SERVER_USER).
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from ._base import (
    ManagedProcess,
    Server,
    ServerStartError,
    _NotReady,
    _unprivileged_user,
    chown_tree,
    extra_jvm_flags,
    free_port,
    java_home,
    java_lib_dir,
    require_dir,
)

_JVM_OPTIONS = """\
-Xms{heap}
-Xmx{heap}
-XX:+UseG1GC
-XX:G1ReservePercent=25
-XX:InitiatingHeapOccupancyPercent=30
-XX:TieredStopAtLevel=1
-XX:-AlwaysPreTouch
-Djava.io.tmpdir=${{OPENSEARCH_TMPDIR}}
-XX:ErrorFile={logs}/hs_err_pid%p.log
-Djava.util.concurrent.ForkJoinPool.common.threadFactory=org.opensearch.secure_sm.SecuredForkJoinWorkerThreadFactory
18-:-Djava.security.manager=allow
20-:--add-modules=jdk.incubator.vector
"""


def opensearch_home() -> Path:
    base = require_dir(java_lib_dir() / "opensearch", "run scripts/setup-java.sh opensearch")
    homes = sorted(p for p in base.glob("opensearch-*") if (p / "bin" / "opensearch").exists())
    if not homes:
        require_dir(base / "opensearch-missing", "run scripts/setup-java.sh --force opensearch")
    return homes[-1]


class OpenSearchServer(Server):
    """Single-node OpenSearch on http://127.0.0.1:<http_port>."""

    name = "opensearch"
    start_timeout = 120.0

    def __init__(
        self,
        workdir=None,
        *,
        http_port: int | None = None,
        transport_port: int | None = None,
        heap: str = "512m",
    ) -> None:
        super().__init__(workdir)
        self._own_ports = http_port is None and transport_port is None
        self.http_port = http_port or free_port()
        self.transport_port = transport_port or free_port()
        self.heap = heap
        self.conf_dir = self.workdir / "config"
        self.data_dir = self.workdir / "data"
        self.logs_dir = self.workdir / "logs"
        self.tmp_dir = self.workdir / "tmp"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def info(self) -> dict[str, object]:
        return {"url": self.url, "host": "127.0.0.1", "port": self.http_port}

    def request(self, method: str, path: str, body: object = None, timeout: float = 30.0) -> dict:
        """JSON request with urllib; raises urllib.error.HTTPError on 4xx/5xx."""
        data = None
        headers = {}
        if body is not None:
            if isinstance(body, (bytes, str)):  # e.g. NDJSON for _bulk
                data = body.encode() if isinstance(body, str) else body
                headers["Content-Type"] = "application/x-ndjson"
            else:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")

    def start(self, timeout: float | None = None) -> Server:
        """A first start whose port another process took between free_port's check and the bind (another xdist
        worker's server: CI saw the transport port's BindException) starts once more on new ports."""
        try:
            return super().start(timeout)
        except ServerStartError as e:
            logs = [p.read_text(errors="replace") for p in self.workdir.glob("*.log")]
            if self.start_count or not self._own_ports or not any("BindException" in t for t in [str(e), *logs]):
                raise
        self.http_port, self.transport_port = free_port(), free_port()
        return super().start(timeout)

    def _launch(self) -> None:
        home = opensearch_home()
        for d in (self.conf_dir, self.data_dir, self.logs_dir, self.tmp_dir):
            d.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "jvm.options.d").mkdir(exist_ok=True)
        shutil.copy(home / "config" / "log4j2.properties", self.conf_dir / "log4j2.properties")
        (self.conf_dir / "jvm.options").write_text(_JVM_OPTIONS.format(heap=self.heap, logs=self.logs_dir))
        (self.conf_dir / "opensearch.yml").write_text(
            "\n".join(
                [
                    "cluster.name: etl-test",
                    "node.name: etl-test-node",
                    "discovery.type: single-node",
                    "network.host: 127.0.0.1",
                    f"http.port: {self.http_port}",
                    f"transport.port: {self.transport_port}",
                    f"path.data: {self.data_dir}",
                    f"path.logs: {self.logs_dir}",
                    # CI disks may be fuller than the 85/90% watermarks:
                    # never let allocation stall or indices go read-only.
                    "cluster.routing.allocation.disk.threshold_enabled: false",
                    "bootstrap.memory_lock: false",
                    "action.destructive_requires_name: false",
                    "",
                ]
            )
        )
        run_as = _unprivileged_user()
        if run_as is not None:
            chown_tree(self.workdir, *run_as)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENSEARCH_", "ES_", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS"))
        }
        env.update(
            OPENSEARCH_PATH_CONF=str(self.conf_dir),
            OPENSEARCH_JAVA_HOME=str(java_home()),
            OPENSEARCH_TMPDIR=str(self.tmp_dir),
            OPENSEARCH_JAVA_OPTS=" ".join(extra_jvm_flags()),
            HOME=str(self.workdir),
        )
        log = self.workdir / "opensearch.log"
        if run_as is not None and not log.exists():
            log.touch()
        self.proc = self._spawn(
            ManagedProcess(
                "opensearch",
                [str(home / "bin" / "opensearch")],
                log,
                env=env,
                cwd=self.workdir,
                run_as=run_as,
            )
        )

    def _probe(self) -> None:
        try:
            health = self.request("GET", "/_cluster/health?wait_for_status=yellow&timeout=2s", timeout=5)
        except urllib.error.HTTPError as exc:  # 503 while the cluster forms
            raise _NotReady(f"HTTP {exc.code}") from exc
        if health.get("status") not in ("yellow", "green"):
            raise _NotReady(f"cluster status {health.get('status')}")
