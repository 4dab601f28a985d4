"""A Spark standalone cluster on 127.0.0.1: one master and two one-core workers, started from pyspark's own
`bin/spark-class` (pip's pyspark has no sbin scripts and needs no download).

Each process has its own work folder (`master/`, `worker-1/`, `worker-2/` under the server's folder: the
workers' SPARK_WORKER_DIR holds the executors' stdout/stderr and their files), ports are chosen free, and
`start()` returns when the master's JSON status lists both workers ALIVE. Workers and their executors run the
test run's interpreter (PYSPARK_PYTHON) so they import the same packages as the driver, without the test run's
PYTHONPATH: etl's session puts the driver's etl first on the executors' path.

    cluster = SparkCluster(); cluster.start(); cluster.master_url  # spark://127.0.0.1:<port>
    cluster.kill_worker(1)      # SIGKILL a worker and its executor (a lost machine)
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import urllib.request
from pathlib import Path

from ._base import ManagedProcess, Server, _NotReady, free_port

WORKERS = 2


def spark_class() -> Path:
    import pyspark

    path = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: pyspark's pip package is expected")
    return path


class SparkCluster(Server):
    name = "spark-cluster"
    start_timeout = 120.0

    def __init__(self, workdir: str | os.PathLike[str] | None = None, workers: int = WORKERS,
                 memory: str = "1g") -> None:
        super().__init__(workdir)
        self.workers = workers
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.worker_ui_ports = [free_port() for _ in range(workers)]
        self.worker_ports = [free_port() for _ in range(workers)]

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "SPARK_NO_DAEMONIZE": "1",
        })
        env.pop("PYTHONPATH", None)  # executors import etl from where the driver tells them (etl/runtime/session.py)
        env.pop("PYSPARK_GATEWAY_PORT", None)
        env.pop("PYSPARK_GATEWAY_SECRET", None)
        return env

    def _process(self, name: str, main: str, *args: str) -> ManagedProcess:
        folder = self.workdir / name
        folder.mkdir(parents=True, exist_ok=True)
        env = self.env()
        env["SPARK_LOG_DIR"] = str(folder)
        env["SPARK_WORKER_DIR"] = str(folder / "work")
        # the quick compiler only, as the servers (the master and workers mostly wait)
        env["SPARK_DAEMON_JAVA_OPTS"] = f"-Djava.io.tmpdir={folder} -XX:TieredStopAtLevel=1"
        return ManagedProcess(name, [str(spark_class()), main, *args], folder / "out.log", env=env, cwd=folder)

    def _launch(self) -> None:
        self._spawn(self._process("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", str(self.port), "--webui-port", str(self.ui_port)))
        for i in range(self.workers):
            self._spawn(self._worker(i))

    def _worker(self, i: int) -> ManagedProcess:
        name = f"worker-{i + 1}"
        return self._process(name, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                             "--port", str(self.worker_ports[i]), "--cores", "1", "--memory", self.memory,
                             "--webui-port", str(self.worker_ui_ports[i]),
                             "--work-dir", str(self.workdir / name / "work"), self.master_url)

    def status(self) -> dict:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=2) as r:
            return json.loads(r.read())

    def alive_workers(self) -> int:
        return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")

    def _probe(self) -> None:
        n = self.alive_workers()
        if n < self.workers:
            raise _NotReady(f"{n} of {self.workers} workers registered")

    def info(self) -> dict[str, object]:
        return {"master": self.master_url, "ui": self.ui_url}

    def worker_dirs(self) -> list[Path]:
        return [self.workdir / f"worker-{i + 1}" / "work" for i in range(self.workers)]

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker `i` (0-based) with its executors: the machine is lost."""
        proc = next(p for p in self.processes if p.name == f"worker-{i + 1}")
        import signal

        # the executor is a child JVM of the worker, in the worker's process group
        assert proc.popen is not None
        os.killpg(proc.popen.pid, signal.SIGKILL)
        for child in _descendants(proc.popen.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        proc.popen.wait(10)
        proc.popen = None

    def worker_of(self, pid: int) -> int:
        """The worker (0-based) a process (an executor's Python worker) runs under."""
        for i in range(self.workers):
            proc = next(p for p in self.processes if p.name == f"worker-{i + 1}")
            if proc.popen is not None and pid in _descendants(proc.popen.pid):
                return i
        raise LookupError(f"process {pid} runs under no worker")

    def ensure_running(self) -> SparkCluster:
        """Start the workers a test killed again and wait until all are registered."""
        import time

        if not self.processes:
            return self.start()
        for k, proc in enumerate(self.processes):
            if not proc.alive() and proc.name.startswith("worker-"):
                i = int(proc.name.split("-")[1]) - 1
                self.worker_ports[i] = free_port()  # a fresh address: the master may still list the dead one
                self.processes[k] = self._worker(i)
                self.processes[k].start()
        self._wait(self._probe, time.monotonic() + self.start_timeout, "workers registered again")
        return self


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
