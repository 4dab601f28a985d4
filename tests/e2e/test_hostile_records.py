"""Issue 35: no record and no Python function stops a stream (`etl run --once` on files, then again).

One input: jsonl and text lines of 200 MB (over ETL_MAX_RECORD_MB=64) and 30 MB (under it: valid JSON that parses,
over Spark's 20 MB JSON string limit), a line that is not UTF-8, a JSON escape of a lone surrogate; a Python function
that crashes its worker (os._exit), loops (caught or not), wants 1 GB (over ETL_FUNCTION_MEMORY_MB=512), returns a
lone surrogate or a 70 MB str, on some rows. The sinks hold exactly the good rows, the dead letters the bad ones
with exact reasons, the run exits 0; a second run reads nothing again.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MB = 1024 * 1024
PIPELINE = """\
    name: hostile-records
    functions:
      - {name: probe, callable: "fns:probe", returns: string, args: [string]}
    sources:
      - {id: events, type: file, path: json_in, format: jsonl, schema: {id: bigint, s: string}}
      - {id: lines, type: file, path: text_in, format: text}
    transforms:
      - {id: called, type: derive, input: events, columns: {p: "probe(s)", n: "length(s)"}}
      - {id: slim, type: select, input: called, fields: [id, p, n]}
      - {id: sized, type: select, input: lines, fields: ["substring(line, 1, 12) AS head", "length(line) AS n"]}
    sinks:
      - {id: out, type: file, input: slim, path: out_json, format: jsonl}
      - {id: text_out, type: file, input: sized, path: out_text, format: jsonl}
    checkpoint: state/checkpoint
"""
FNS = '''\
import os


def probe(s):
    if s == "crash":
        os._exit(3)
    if s == "hang":
        while True:
            pass
    if s == "stubborn":  # catches even the interruption: its worker is ended
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
    if s == "hungry":
        return str(len(bytearray(1024 * 1024 * 1024)))
    if s == "surrogate":
        return "a\\ud800b"
    if s == "huge":
        return "x" * (70 * 1024 * 1024)
    return s[:8].upper()
'''


def write_inputs(work: Path) -> tuple[bytes, bytes]:
    (work / "json_in").mkdir()
    (work / "text_in").mkdir()
    big = b'{"id": 2, "s": "' + b"a" * (200 * MB) + b'"}'
    bad_utf8 = b'{"id": 5, "s": "caf\xe9"}'
    rows = [b'{"id": 1, "s": "first"}', big, b'{"id": 3, "s": "' + b"b" * (30 * MB) + b'"}',
            b'{"id": 4, "s": "lone \\ud800 here"}', bad_utf8, b'{"id": 6, "s": "pair \\ud83d\\ude00"}']
    rows += [b'{"id": %d, "s": "%s"}' % (10 + i, k.encode())
             for i, k in enumerate(["crash", "hang", "stubborn", "hungry", "surrogate", "huge"])]
    rows.append(b'{"id": 99, "s": "last"}')
    (work / "json_in" / "part-0.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    text = [b"short line", b"c" * (200 * MB), b"d" * (30 * MB), b"not utf-8 \xff\xfe", b"tail line"]
    (work / "text_in" / "part-0.txt").write_bytes(b"\n".join(text) + b"\n")
    return bad_utf8, b"not utf-8 \xff\xfe"


def run_once(work: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "ETL_MAX_RECORD_MB": "64", "ETL_FUNCTION_TIMEOUT_S": "1", "ETL_FUNCTION_MEMORY_MB": "512"}
    t = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "etl", "run", "pipeline.yaml", "--once", "--quiet",
                           "--conf", "spark.ui.enabled=false"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900)
    return done, time.monotonic() - t


def jsonl(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*.jsonl")) for x in f.read_text().splitlines()]


def test_hostile_records_and_functions(tmp_path: Path) -> None:
    work = tmp_path
    (work / "pipeline.yaml").write_text(textwrap.dedent(PIPELINE))
    (work / "fns.py").write_text(FNS)
    bad_json, bad_text = write_inputs(work)
    done, seconds = run_once(work)
    print(f"first run: {seconds:.1f} s")
    assert done.returncode == 0, done.stderr[-3000:]

    out = sorted(jsonl(work / "out_json"), key=lambda r: r["id"])
    assert out == [{"id": 1, "p": "FIRST", "n": 5}, {"id": 3, "p": "BBBBBBBB", "n": 30 * MB},
                   {"id": 6, "p": "PAIR 😀", "n": 6}, {"id": 99, "p": "LAST", "n": 4}]
    texts = sorted(jsonl(work / "out_text"), key=lambda r: r["n"])
    assert texts == [{"head": "tail line", "n": 9}, {"head": "short line", "n": 10}, {"head": "d" * 12, "n": 30 * MB}]

    dead = jsonl(work / "state" / "dead_letters")
    by = {(d["stage"], d["payload"][:40]): d["reason"] for d in dead}
    big = f"is over the maximum record size of {64 * MB} bytes (ETL_MAX_RECORD_MB); payload: its first 1024 bytes"
    fn = "USER_RAISED_EXCEPTION: python function 'probe' failed: "
    pos = "pipeline.yaml:8:60: derive 'called' column 'p': "
    want = {
        ("events", '{"id": 2, "s": "' + "a" * 24): f"record of {200 * MB + 19} bytes (line end included) {big}",
        ("events", '{"id": 4, "s": "lone \\ud800 here"}'):
            "json escape \\ud800 at offset 21 is a lone surrogate, not a Unicode character",
        ("events", base64.b64encode(bad_json).decode()[:40]):
            f"line is not valid UTF-8 (byte 0xE9 at offset 19); payload: the line's {len(bad_json)} bytes in base64",
        ("lines", "c" * 40): f"record of {200 * MB + 1} bytes (line end included) {big}",
        ("lines", base64.b64encode(bad_text).decode()[:40]):
            f"line is not valid UTF-8 (byte 0xFF at offset 10); payload: the line's {len(bad_text)} bytes in base64",
    }
    for i, what in enumerate(["crash", "hang", "stubborn", "hungry", "surrogate", "huge"]):
        want[("called", json.dumps({"id": 10 + i, "s": what}, separators=(",", ":"))[:40])] = None
    assert set(by) == set(want), sorted(by)
    for k, reason in want.items():
        if reason is not None:
            assert by[k] == reason, (k, by[k])
    calls = {json.loads(p)["s"]: r for (stage, p), r in by.items() if stage == "called"}
    assert calls == {
        "crash": pos + fn + "its Python worker ended during this call (os._exit, a crash or a signal such as the OOM "
                            "killer's); the call was not made again",
        "hang": pos + fn + "did not return within 1 s (ETL_FUNCTION_TIMEOUT_S)",
        "stubborn": pos + fn + "did not return within 1 s (ETL_FUNCTION_TIMEOUT_S), nor 5 s after it was interrupted: "
                               "its worker was ended",
        "hungry": pos + fn + "MemoryError (more memory than its worker may have: ETL_FUNCTION_MEMORY_MB=512)",
        "surrogate": pos + fn + "returned a str that is not valid Unicode (a lone surrogate U+D800 at index 1): UTF-8 "
                                "cannot encode it",
        "huge": pos + fn + f"returned a str of {70 * MB} bytes, over the maximum record size of {64 * MB} bytes "
                           "(ETL_MAX_RECORD_MB)",
    }
    assert len(dead) == len(want)

    again, seconds = run_once(work)
    print(f"second run: {seconds:.1f} s")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(jsonl(work / "out_json")) == 4 and len(jsonl(work / "out_text")) == 3
    assert len(jsonl(work / "state" / "dead_letters")) == len(want)
