"""Process management shared by the test servers.

A :class:`Server` owns a work directory (data, config, logs) that survives
``stop()`` so that ``start()`` brings the same server back on the same ports
with the same data. Processes run in their own session, their output goes to
a log file in the work directory, and on a failed start they are killed and
:class:`ServerStartError` carries the log tail.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG_TAIL_LINES = 60
_ERROR_LINE = re.compile(r"\b(ERROR|FATAL|SEVERE|Exception|\[ERROR\])\b")


class ServerStartError(RuntimeError):
    """A server did not become ready; the message includes its log tail."""


class _NotReady(Exception):
    """Raised by readiness probes while the server is still starting."""


def java_lib_dir() -> Path:
    """Folder filled by scripts/setup-java.sh (override: ETL_JAVA_LIB)."""
    return Path(os.environ.get("ETL_JAVA_LIB", REPO_ROOT / "java" / "lib"))


def java_home() -> Path:
    """JAVA_HOME, or the JDK that owns the ``java`` on PATH."""
    env = os.environ.get("JAVA_HOME")
    if env and (Path(env) / "bin" / "java").exists():
        return Path(env)
    java = shutil.which("java")
    if java is None:
        raise ServerStartError("java not found: install Java 17 or set JAVA_HOME")
    return Path(os.path.realpath(java)).parents[1]


def java_binary() -> str:
    return str(java_home() / "bin" / "java")


def heap_mb(size: str) -> int:
    """'512m' / '1g' / '262144k' -> megabytes."""
    factor = {"k": 1 / 1024, "m": 1, "g": 1024}[size[-1].lower()]
    return int(float(size[:-1]) * factor)


def java_heap_flags(heap: str, initial_cap: str = "256m") -> list[str]:
    """-Xms (at most ``initial_cap``, so idle servers stay small) and -Xmx."""
    xms = heap if heap_mb(heap) <= heap_mb(initial_cap) else initial_cap
    return [f"-Xms{xms}", f"-Xmx{heap}"]


def extra_jvm_flags() -> list[str]:
    """ETL_TEST_SERVER_JVM_OPTS, appended last to every server JVM (last flag
    wins), e.g. ``-XX:TieredStopAtLevel=4`` to re-enable C2 for benchmarks."""
    return shlex.split(os.environ.get("ETL_TEST_SERVER_JVM_OPTS", ""))


def require_dir(path: Path, hint: str) -> Path:
    if not path.is_dir() or not any(path.iterdir()):
        raise ServerStartError(f"{path} is missing or empty: {hint}")
    return path


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


_taken_ports: set[int] = set()
_port_lock = threading.Lock()


def _port_range() -> tuple[int, int]:
    """Ports below the kernel's ephemeral range: an outgoing connection cannot
    take a stopped server's port while it is down (restart on the same port)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return (10000, low) if low > 12000 else (low - 2000, low)


def free_port(span: Sequence[int] = (0,)) -> int:
    """A port p such that p + d is free for every d in ``span``.

    Ports handed out in this process are not handed out again, so two servers
    of one test session never collide, and a stopped server keeps its ports.
    """
    lo, hi = _port_range()
    rng = random.Random()
    with _port_lock:
        for _ in range(1000):
            base = rng.randrange(lo + 2, hi - 2)
            ports = [base + d for d in span]
            if any(p in _taken_ports for p in ports):
                continue
            if all(port_is_free(p) for p in ports):
                _taken_ports.update(ports)
                return base
    raise ServerStartError(f"no free port block {tuple(span)} found in {lo}-{hi}")


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return f"(no log file {path})"
    return "\n".join(data.splitlines()[-lines:])


def _unprivileged_user() -> tuple[int, int] | None:
    """(uid, gid) to drop to when we are root, for servers that refuse root."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("ETL_TEST_SERVER_USER", "nobody")
    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


_SETPRIV = shutil.which("setpriv") or ("/usr/bin/setpriv" if os.path.exists("/usr/bin/setpriv") else None)


def _wrap(argv: list[str], run_as: tuple[int, int] | None) -> list[str]:
    """Prefix ``setpriv`` (util-linux) to drop to another user and/or ask the
    kernel to SIGTERM the server when the test process dies, so a crashed or
    killed pytest does not leave servers behind. The parent-death signal is
    tied to the *thread* that forks, so it is only set from the main thread
    (Outage restarts servers from a short-lived thread)."""
    prefix: list[str] = []
    pdeathsig = threading.current_thread() is threading.main_thread()
    if (run_as is not None or pdeathsig) and _SETPRIV:
        prefix = [_SETPRIV]
        if pdeathsig:
            prefix += ["--pdeathsig", "TERM"]
        if run_as is not None:
            prefix += ["--reuid", str(run_as[0]), "--regid", str(run_as[1]), "--clear-groups"]
        prefix.append("--")
    elif run_as is not None:
        raise ServerStartError("setpriv (util-linux) is needed to run a server as another user")
    return prefix + argv


class ManagedProcess:
    """One OS process in its own session, output appended to ``log_path``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        run_as: tuple[int, int] | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.run_as = run_as
        self.popen: subprocess.Popen[bytes] | None = None
        self.log_offset = 0

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.log_offset = log.tell()
            log.write(f"\n===== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
            log.flush()
            self.popen = subprocess.Popen(
                _wrap(self.argv, self.run_as),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def exit_code(self) -> int | None:
        return self.popen.poll() if self.popen else None

    def new_output(self) -> str:
        """Log text written since the last start()."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def _signal_group(self, sig: int) -> None:
        assert self.popen is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout`` seconds."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        # Children that outlived the leader (shell wrappers) go too.
        self._signal_group(signal.SIGKILL)
        self.popen = None

    def kill(self) -> None:
        if self.popen is None:
            return
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)


_live_servers: weakref.WeakSet[Server] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for server in list(_live_servers):
        with contextlib.suppress(Exception):
            server.kill()


class Server:
    """Base class: subclasses fill in :meth:`_launch` and :meth:`_probe`."""

    name = "server"
    start_timeout = 120.0
    stop_timeout = 30.0

    def __init__(self, workdir: str | os.PathLike[str] | None = None) -> None:
        if workdir is None:
            # Our own folder under /tmp, not pytest's 0700 tree: servers that
            # run as another user must reach it, and unix socket paths must
            # stay under 108 bytes.
            self.workdir = Path(tempfile.mkdtemp(prefix=f"etl-{self.name}-"))
            self._owns_workdir = True
        else:
            self.workdir = Path(workdir)
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._owns_workdir = False
        self.processes: list[ManagedProcess] = []
        self.startup_seconds: float | None = None
        self.start_count = 0

    # -- to implement ------------------------------------------------------

    def _launch(self) -> None:
        """Prepare config/data (first time only where needed), start processes."""
        raise NotImplementedError

    def _probe(self) -> None:
        """Return when ready; raise _NotReady (or any OSError) while starting."""
        raise NotImplementedError

    def info(self) -> dict[str, object]:
        """Connection parameters."""
        raise NotImplementedError

    # -- lifecycle ---------------------------------------------------------

    @property
    def running(self) -> bool:
        return bool(self.processes) and all(p.alive() for p in self.processes)

    def start(self, timeout: float | None = None) -> Server:
        """Start and wait until ready; on failure kill and raise ServerStartError."""
        if self.running:
            return self
        timeout = self.start_timeout if timeout is None else timeout
        began = time.monotonic()
        _live_servers.add(self)
        try:
            self._launch()
            self._wait(self._probe, began + timeout, f"{self.name} ready")
        except BaseException as exc:
            logs = self.log_tails()
            self.kill()
            if isinstance(exc, ServerStartError):
                raise ServerStartError(f"{exc}\n{logs}") from None
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise ServerStartError(f"{self.name} failed to start: {exc!r}\n{logs}") from exc
        self.startup_seconds = time.monotonic() - began
        self.start_count += 1
        return self

    def ensure_running(self) -> Server:
        return self.start()

    def stop(self, timeout: float | None = None) -> None:
        """Clean shutdown (SIGTERM, then SIGKILL); data and ports are kept."""
        timeout = self.stop_timeout if timeout is None else timeout
        for proc in reversed(self.processes):
            proc.stop(timeout)
        self.processes = []

    def kill(self) -> None:
        for proc in reversed(self.processes):
            proc.kill()
        self.processes = []

    def restart(self, timeout: float | None = None) -> Server:
        self.stop()
        return self.start(timeout)

    def cleanup(self, graceful: bool = True) -> None:
        """Stop (or kill: nothing is read afterwards) and delete the work directory if this object created it."""
        if graceful:
            self.stop()
        else:
            self.kill()
        _live_servers.discard(self)
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    @contextlib.contextmanager
    def down(self, seconds: float = 0.0) -> Iterator[Server]:
        """``with server.down(): ...`` -- stopped inside the block, started after."""
        self.stop()
        try:
            yield self
            if seconds:
                time.sleep(seconds)
        finally:
            self.start()

    def outage(self, seconds: float) -> Outage:
        """Stop, stay down ``seconds``, start again -- all in a background
        thread; ``outage.join()`` waits for the restart."""
        return Outage(self, seconds)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- helpers -----------------------------------------------------------

    def _spawn(self, proc: ManagedProcess) -> ManagedProcess:
        self.processes.append(proc)
        proc.start()
        return proc

    def _wait(self, probe: Callable[[], object], deadline: float, what: str) -> None:
        last: BaseException | None = None
        while True:
            for proc in self.processes:
                if not proc.alive():
                    raise ServerStartError(
                        f"{self.name}: process {proc.name} exited with code {proc.exit_code()} "
                        f"while waiting for {what}"
                    )
            try:
                probe()
                return
            except (_NotReady, OSError) as exc:
                last = exc
            except (AttributeError, TypeError, NameError, ImportError):
                raise  # a bug in the probe or a missing client library
            except Exception as exc:  # noqa: BLE001 - client libraries raise their own types
                last = exc
            if time.monotonic() > deadline:
                raise ServerStartError(f"{self.name}: timed out waiting for {what}; last probe error: {last!r}")
            time.sleep(0.25)

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> str:
        parts = []
        for proc in self.processes:
            errors = [
                line for line in proc.new_output().splitlines()
                if _ERROR_LINE.search(line)
            ][:20]
            if errors:
                parts.append(f"----- {proc.name} log, first error lines -----")
                parts.extend(errors)
            parts.append(f"----- {proc.name} log ({proc.log_path}), last {lines} lines -----")
            parts.append(tail(proc.log_path, lines))
        for extra in self._extra_logs():
            parts.append(f"----- {extra}, last {lines} lines -----")
            parts.append(tail(extra, lines))
        return "\n".join(parts)

    def _extra_logs(self) -> list[Path]:
        return []

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<{type(self).__name__} {state} {self.info()} workdir={self.workdir}>"


class Outage:
    """Background stop, ``seconds`` down, start again.

    Returns at once; the stop itself runs in the thread too (a graceful
    RocketMQ broker stop takes ~15 s). ``stopped`` / ``restarted`` are
    threading.Events; ``join()`` waits and re-raises a failed stop/start.
    """

    def __init__(self, server: Server, seconds: float) -> None:
        self.server = server
        self.seconds = seconds
        self.error: BaseException | None = None
        self.stopped = threading.Event()
        self.restarted = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"outage-{server.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.server.stop()
            self.stopped.set()
            time.sleep(self.seconds)
            self.server.start()
        except BaseException as exc:  # noqa: BLE001 - handed to join()
            self.error = exc
        finally:
            self.stopped.set()
            self.restarted.set()

    def wait_stopped(self, timeout: float | None = 120.0) -> None:
        if not self.stopped.wait(timeout):
            raise TimeoutError(f"{self.server.name} not stopped within {timeout}s")

    def join(self, timeout: float | None = None) -> Server:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"{self.server.name} not restarted within {timeout}s")
        if self.error is not None:
            raise self.error
        return self.server


def chown_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)
