"""`etl drain PIPELINE`: a request file in the checkpoint (the running `etl run` drains when it appears)."""
import json
from pathlib import Path

from typer.testing import CliRunner

from etl.cli import app
from etl.compile import drain

from .helpers import write

PIPE = """
name: d
sources:
  - {id: gen, type: generator, fields: {a: {sequence: 1}}}
sinks:
  - {id: out, type: print, input: gen}
"""


def test_drain_command_writes_request_and_waits(tmp_path):
    p = write(tmp_path, "d.yaml", PIPE)
    ck = tmp_path / "ck"
    r = CliRunner().invoke(app, ["drain", str(p), "--checkpoint", str(ck)])
    assert r.exit_code == 0, r.output
    assert f"etl drain: asked 'd' to drain (checkpoint {ck})" in r.output
    assert drain.requested(str(ck))
    r = CliRunner().invoke(app, ["drain", str(p), "--checkpoint", str(ck), "--wait", "0.6"])
    assert r.exit_code == 1
    assert f"etl drain: not drained within 0.6 s; is `etl run` running on {ck}?" in r.output


def test_drain_record(tmp_path):
    assert drain.drained(str(tmp_path)) is None
    drain.mark_drained(str(tmp_path), "etl run --drain")
    rec = json.loads((Path(tmp_path) / drain.MARK).read_text())
    assert rec["how"] == "etl run --drain" and drain.drained(str(tmp_path)) == rec
    drain.write_sentinel(str(tmp_path))
    assert json.loads((tmp_path / drain.SENTINEL_DIR / "sentinel.json").read_text()) == {"t": drain.SENTINEL_TIME}
    assert [f.name for f in (tmp_path / drain.SENTINEL_DIR).iterdir()] == ["sentinel.json"]
