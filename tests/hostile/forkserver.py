"""Run `etl` commands as forked children of one warm process (the hostile corpora's command line).

Starting `python -m etl` costs about 0.5 s of CPU (interpreter, pydantic models, jinja2): hundreds of
hostile cases x three commands would add minutes to CI. This server imports the CLI once and forks one
child per command: each child is a real, separate process (its own address-space limit, its own
timeout, its own stdout/stderr, a clean copy of the state the server had before any case ran) that runs
`etl.cli.main` exactly as `python -m etl` does.

Protocol: one JSON request per line on stdin ({"cwd", "args", "timeout", "memory"}), one JSON answer
per line on stdout ({"rc", "out", "err", "timed_out"}). `CliServer` is the test side.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _child(req: dict, out_fd: int, err_fd: int) -> None:
    import resource

    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    resource.setrlimit(resource.RLIMIT_AS, (req["memory"], req["memory"]))
    os.chdir(req["cwd"])
    sys.argv = ["etl", *req["args"]]
    code = 0
    try:
        from etl.cli import main

        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - an escaped exception is what the tests look for: print it
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _one(req: dict) -> dict:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            try:
                _child(req, out.fileno(), err.fileno())
            finally:
                os._exit(70)
        deadline = time.monotonic() + req["timeout"]
        timed_out = False
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                timed_out = True
                break
            time.sleep(0.002)
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"rc": rc, "out": out.read().decode("utf-8", "replace"),
                "err": err.read().decode("utf-8", "replace"), "timed_out": timed_out}


_WARM = """\
name: warm
{% set n = 2 %}
sources:
  - {id: src, type: generator, fields: {a: {int_range: [1, 5]}, cmd: {choice: [ls, curl x]}}}
transforms:
  - id: f
    type: filter
    input: src
    rules:
      - {id: r1, when: {field: cmd, regex: 'curl .*x', caseless: true}}
      - {id: r2, when: {field: cmd, contains: "wget"}}
  - {id: d, type: derive, input: f, columns: {b: "a * {{ n }}"}}
sinks:
  - {id: out, type: print, input: d}
"""


def _warm() -> None:
    """One check and explain of a small pipeline before any case: pydantic, jinja2 and the optimizer build
    their lazy parts (0.3 s of CPU) once here instead of in every child."""
    from etl.check import check_file
    from etl.plan.explain import explain_plan

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warm.yaml"
        path.write_text(_WARM)
        checked = check_file(path, programs=True)
        assert checked.plan is not None, [d.render() for d in checked.report.sorted()]
        explain_plan(checked.plan)


def serve() -> None:
    import etl.cli  # noqa: F401 - warm: every child starts from the imported CLI (its import registers the commands)

    _warm()
    for line in sys.stdin:
        sys.stdout.write(json.dumps(_one(json.loads(line))) + "\n")
        sys.stdout.flush()


class CliServer:
    """The test side: `run(cwd, *args)` -> subprocess.CompletedProcess of one `etl` command."""

    def __init__(self, env: dict[str, str], root: Path, timeout: float = 60, memory: int = 2 * 1024 ** 3):
        self.timeout, self.memory = timeout, memory
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.hostile.forkserver"], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, cwd: Path, *args: str) -> subprocess.CompletedProcess:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        req = {"cwd": str(cwd), "args": list(args), "timeout": self.timeout, "memory": self.memory}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired(["etl", *args], self.timeout, answer["out"], answer["err"])
        return subprocess.CompletedProcess(["etl", *args], answer["rc"], answer["out"], answer["err"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


if __name__ == "__main__":
    serve()
