"""Operating a running pipeline: `etl run --metrics-port` scraped with the Prometheus parser, and `etl tap`
sampling a component's rows and a stage's dead letters, while the sink output stays exactly what it would be.
The same run is probed as another local user (`nobody`): no state file is readable or writable, no endpoint
answers without the run's token (401, no data) or to a foreign Host header (403); a second `etl run` of it is
refused up front."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

PIPELINE = """\
    name: operate-test
    sources:
      - {id: src, type: file, path: input, format: text, max_files_per_trigger: 1}
    transforms:
      - id: fields
        type: parse
        input: src
        field: line
        format: kv
        schema: {user: string, level: string, latency_ms: int}
        keep_original: false
      - {id: slow, type: filter, input: fields, expr: "latency_ms >= 500 OR level = 'error'"}
    sinks:
      - {id: out, type: file, input: slow, path: output}
    checkpoint: state
    trigger: {interval: 200ms}
"""
FILES = [
    ["user=u1 level=info latency_ms=600", "user=u2 level=info latency_ms=10", "user=u3 level=error latency_ms=5",
     "garbage"],
    ["user=u4 level=info latency_ms=900", "user=u5 level=info latency_ms=x", "user=u6 level=info latency_ms=700"],
]
PASSED = [{"user": "u1", "level": "info", "latency_ms": 600}, {"user": "u3", "level": "error", "latency_ms": 5},
          {"user": "u4", "level": "info", "latency_ms": 900}, {"user": "u6", "level": "info", "latency_ms": 700}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def etl(*args: str, cwd: Path) -> subprocess.Popen:
    """`python -m etl ARGS` with this checkout's etl (not whichever one the environment has installed)."""
    return subprocess.Popen([sys.executable, "-m", "etl", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def wait(what, timeout: float = 240.0, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


def rows(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*.jsonl")) for x in f.read_text().splitlines()]


def authorized(url: str, work: Path) -> Request:
    """A request with the run's token (as Prometheus sends it: `authorization: {credentials_file: ...}`)."""
    return Request(url, headers={"Authorization": f"Bearer {(work / 'control.token').read_text()}"})


def scrape(port: int, work: Path) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = urlopen(authorized(f"http://127.0.0.1:{port}/metrics", work), timeout=5).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


@pytest.fixture(scope="module")
def operated(request):
    """One continuous run with two taps attached while two input files are dropped one after the other."""
    # a folder every local user may enter (pytest's are its owner's only): what guards the run's files is etl
    work = Path(tempfile.mkdtemp(prefix="etl-operate-", dir="/tmp"))
    work.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    (work / "input").mkdir()
    (work / "p.yaml").write_text(textwrap.dedent(PIPELINE))
    port = free_port()
    run = etl("run", "p.yaml", "--progress", "json", "--metrics-port", str(port), "--profile", "light",
              "--set", "ETL_COMPONENT_COUNTS=on", cwd=work)
    try:
        wait(lambda: (work / "run.json").exists() or run.poll() is not None)
        assert run.poll() is None, run.communicate()[1][-3000:]
        address = json.loads((work / "run.json").read_text())["address"]
        taps = [etl("tap", "p.yaml", "slow", "--limit", "2", "--every", "0", "--count", "4", cwd=work),
                etl("tap", "p.yaml", "fields", "--dead-letters", "--every", "0", "--count", "2", cwd=work)]
        wait(lambda: json.loads(urlopen(authorized(f"{address}/status", work)).read())["taps"] == 2)  # JVM up
        probe = as_nobody(work, address, port)
        second = subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml"], cwd=work, capture_output=True,
                                text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        run_file = (work / "run.json").read_text()
        jvm = [a for pid in descendants(run.pid) for a in cmdline(pid) if cmdline(pid)[:1] and
               cmdline(pid)[0].endswith("java")]
        for n, lines in enumerate(FILES):
            (work / f".f{n}").write_text("".join(x + "\n" for x in lines))
            (work / f".f{n}").rename(work / "input" / f"f{n}.log")
            wait(lambda n=n: len(rows(work / "output")) == [2, 4][n])
        tapped = [[json.loads(x) for x in t.communicate(timeout=120)[0].splitlines()] for t in taps]
        metrics = wait(lambda: (m := scrape(port, work))[("etl_batches_total", (("pipeline", "operate-test"),
                                                                                  ("query", "src")))] == 2 and m)
        top = subprocess.run([sys.executable, "-m", "etl", "top", "p.yaml", "--iterations", "1"], cwd=work,
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "150"})
        modes = {str(p.relative_to(work)): stat.S_IMODE(p.stat().st_mode) for p in work.rglob("*")
                 if not p.is_relative_to(work / "input") and not p.name.startswith(".f")}
    finally:
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err[-3000:]
    return {"work": work, "tapped": tapped, "metrics": metrics, "progress": err, "jvm": jvm, "probe": probe,
            "second": second, "run_file": run_file, "top": top, "modes": modes}


PROBE = """
import http.client, json, os, sys
work, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {"read": {}, "write": {}, "http": {}}
for root, dirs, files in os.walk(work, onerror=lambda e: out["read"].__setitem__(e.filename, type(e).__name__)):
    for f in files:
        p = os.path.join(root, f)
        try:
            open(p, "rb").read(1)
            out["read"][p] = "read"
        except OSError as e:
            out["read"][p] = type(e).__name__
for p in ("state/_etl_drain/evil.json", "state/_etl_drain_request", "control.token", "state/x"):
    try:
        open(os.path.join(work, p), "a").close()
        out["write"][p] = "written"
    except OSError as e:
        out["write"][p] = type(e).__name__
for name, (host, p, path, headers) in {
        "status": ("127.0.0.1", int(address.rsplit(":", 1)[1]), "/status", {}),
        "tap": ("127.0.0.1", int(address.rsplit(":", 1)[1]), "/tap?component=slow", {}),
        "metrics": ("127.0.0.1", port, "/metrics", {}),
        "guessed": ("127.0.0.1", port, "/metrics", {"Authorization": "Bearer " + "A" * 43}),
        "rebound": ("127.0.0.1", int(address.rsplit(":", 1)[1]), "/status", {"Host": "evil.example"}),
        }.items():
    c = http.client.HTTPConnection(host, p, timeout=10)
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    out["http"][name] = [r.status, r.read().decode()]
print(json.dumps(out))
"""


def as_nobody(work: Path, address: str, port: int) -> dict:
    """What the local user `nobody` can read, write and get from the run (the test runs as root)."""
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                        PROBE, str(work), address, str(port)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                kids.setdefault(int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def test_tap_prints_the_sampled_rows_and_dead_letters_and_the_sink_output_is_unchanged(operated):
    slow, dead = operated["tapped"]
    assert [(t["component"], t["kind"], t["query"], t["batch"], t["row"]) for t in slow] == [
        ("slow", "out", "src", 0, PASSED[0]), ("slow", "out", "src", 0, PASSED[1]),
        ("slow", "out", "src", 1, PASSED[2]), ("slow", "out", "src", 1, PASSED[3])]
    assert [(t["component"], t["kind"], t["batch"], t["row"]["stage"], t["row"]["payload"]) for t in dead] == [
        ("fields", "dead", 0, "fields", "garbage"), ("fields", "dead", 1, "fields", "user=u5 level=info latency_ms=x")]
    assert sorted(rows(operated["work"] / "output"), key=lambda r: r["user"]) == PASSED
    assert len(rows(operated["work"] / "dead_letters")) == 2
    assert not (operated["work"] / "run.json").exists()  # removed when the run stops


def test_metrics_scraped_during_the_run_count_exactly(operated):
    m = {(name, dict(labels).get("component") or dict(labels).get("query")): v
         for (name, labels), v in operated["metrics"].items() if dict(labels).get("pipeline") == "operate-test"}
    assert m[("etl_component_rows_in_total", "src")] == 7
    assert m[("etl_component_rows_out_total", "src")] == 7
    assert m[("etl_component_rows_in_total", "fields")] == 7  # transforms: rows out observed, rows in along edges
    assert m[("etl_component_rows_out_total", "fields")] == 5  # 2 lines are dead letters
    assert m[("etl_component_rows_in_total", "slow")] == 5
    assert m[("etl_component_rows_out_total", "slow")] == 4
    assert m[("etl_component_rows_in_total", "out")] == 4
    assert m[("etl_component_rows_out_total", "out")] == 4
    assert m[("etl_component_rows_out_total", "dead_letter")] == 2
    assert m[("etl_dead_letters_total", "src")] == 2
    assert m[("etl_query_input_rows_total", "src")] == 7
    assert m[("etl_sink_retries_total", "out")] == 0
    assert m[("etl_batch_duration_seconds_count", "src")] == 2
    assert m[("etl_sink_flush_seconds_count", "out")] == 2
    assert m[("etl_spark_batch_id", "src")] == 1
    assert m[("etl_spark_input_rows", "src")] == 3
    assert m[("etl_state_rows", "src")] == 0
    assert m[("etl_batch_duration_seconds_sum", "src")] > 0


def test_the_light_profile_runs_the_jvm_with_a_small_heap_not_pre_touched(operated):
    jvm = operated["jvm"]
    assert "-Xmx512m" in jvm and "-XX:+UseSerialGC" in jvm and "-XX:MaxDirectMemorySize=128m" in jvm
    assert not [a for a in jvm if a.startswith("-Xms") or "AlwaysPreTouch" in a]
    assert any(a == "spark.master=local[1]" for a in jvm) or "local[1]" in " ".join(jvm)


def test_another_local_user_reads_writes_and_gets_nothing(operated):
    probe, work = operated["probe"], operated["work"]
    readable = {p for p, how in probe["read"].items() if how == "read"}
    # nobody lists the work folder (the user's own, 0755: its input folder still empty then) and reads the
    # pipeline file the test wrote, nothing etl wrote
    assert readable == {str(work / "p.yaml")}
    assert probe["read"][str(work / "run.json")] == probe["read"][str(work / "control.token")] == "PermissionError"
    # folders it cannot enter (the sinks' output and dead letters come later: their modes are checked below)
    assert [probe["read"].get(str(work / d)) for d in ("state", "logs")] == ["PermissionError"] * 2
    assert set(probe["write"].values()) == {"PermissionError"}
    assert probe["http"] == {"status": [401, "unauthorized\n"], "tap": [401, "unauthorized\n"],
                             "metrics": [401, "unauthorized\n"], "guessed": [401, "unauthorized\n"],
                             "rebound": [403, "forbidden\n"]}


def test_what_etl_writes_is_its_owners_only(operated):
    modes = operated["modes"]
    assert modes["run.json"] == modes["control.token"] == 0o600
    for folder in ("state", "state/src", "state/src/offsets", "state/_etl_drain", "logs", "output", "dead_letters"):
        assert modes[folder] == 0o700, folder
    assert {m for p, m in modes.items() if p.startswith(("state/", "logs/", "output/", "dead_letters/"))} == \
        {0o600, 0o700}, {p: oct(m) for p, m in modes.items() if m not in (0o600, 0o700)}
    assert [p for p in modes if p.startswith("logs/etl-run-")]  # the run log is among them


def test_a_second_run_of_the_checkpoint_is_refused_and_the_live_one_untouched(operated):
    second, work = operated["second"], operated["work"]
    pid = json.loads(operated["run_file"])["pid"]
    assert second.returncode == 1
    assert second.stderr.splitlines()[:2] == [
        f"p.yaml:15:13: E410 pipeline 'operate-test': checkpoint {work / 'state'} is in use by a running "
        f"`etl run` (pid {pid})",
        f"    hint: one run per checkpoint: stop that run first (kill -TERM {pid}), or give this one its own "
        "checkpoint (--checkpoint DIR)"]
    assert json.loads(operated["run_file"])["address"].startswith("http://127.0.0.1:")  # still there after it


def test_top_reads_the_token_of_the_run(operated):
    top = operated["top"]
    assert top.returncode == 0, top.stderr
    shown = [ln.split("│")[1].strip() for ln in top.stdout.splitlines() if ln.count("│") > 2]
    assert shown == ["src", "fields", "slow", "dead_letter", "out", "src"], top.stdout  # components, the query
