"""`etl drain PIPELINE`: a request file in the checkpoint (the running `etl run` drains when it appears)."""
import hashlib
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
    drain.write_sentinel(str(tmp_path), "n0nce")
    name = drain.sentinel_name("n0nce")
    assert name == f"sentinel-{hashlib.sha256(b'n0nce').hexdigest()[:16]}.json"
    assert json.loads((tmp_path / drain.SENTINEL_DIR / name).read_text()) == {"t": drain.SENTINEL_TIME,
                                                                              "nonce": "n0nce"}
    assert [f.name for f in (tmp_path / drain.SENTINEL_DIR).iterdir()] == [name]
    drain.mark_drained(str(tmp_path), "etl run --drain", "n0nce")
    rec = json.loads((Path(tmp_path) / drain.MARK).read_text())
    assert rec["how"] == "etl run --drain" and drain.drained(str(tmp_path)) == rec
    assert list((tmp_path / drain.SENTINEL_DIR).iterdir()) == []  # read and committed: removed


def test_a_stray_file_in_the_drain_folder_is_named_once_and_ignored(tmp_path, caplog):
    d = tmp_path / drain.SENTINEL_DIR
    d.mkdir()
    (d / "evil.json").write_text(json.dumps({"t": drain.SENTINEL_TIME}) + "\n")
    (d / ".part.tmp").write_text("")  # the file source skips hidden names: so does the warning
    with caplog.at_level("WARNING", logger="etl.run"):
        warned = drain.warn_strays(str(tmp_path), set())
        assert drain.warn_strays(str(tmp_path), warned) == {"evil.json"}
    assert [r.getMessage() for r in caplog.records] == [
        f"etl: {tmp_path}/_etl_drain/evil.json was not written by this run's drain: ignored (only `etl drain`, "
        "SIGUSR1 or --drain move the watermarks)"]
