"""The file source with `tail: true` (format text): lines read by file identity and byte offset, as `tail -F`.

Spark's file source reads each file once, whole, by name. A tailing source follows files instead: its offset
(checkpointed by Spark as JSON) holds, per file identity (device, inode), the name it was last seen under, a
generation and the byte offset up to which its lines were read. Each micro-batch reads what lies between the
previous offset and the current end of each file's complete lines (a line is read once its newline is
written), so:

* appended lines are read, once;
* a renamed file keeps its identity: its new name is not read again (logrotate's `create`), and lines written to
  it before the rename and not yet read are read (the file is found by identity in its folder);
* a truncated file (`copytruncate`) is noticed when its size falls below the offset or its first bytes (up to
  256 of those read) changed: a warning naming it, then its lines are read from its start again (a new
  generation);
* a recreated file of the same name is a new identity: read from its start.

Each line passes the checks every line source has (etl/jvm/BoundedLines.java, with the same reasons): a line
over the maximum record size (ETL_MAX_RECORD_MB) or not valid UTF-8 is a dead letter (`reject` column) with its
first 1,024 bytes, or its bytes in base64; never silently changed.

Files that are gone are dropped from the offset. A batch replayed after a crash reads the same byte ranges
(exactly-once as long as read lines are not rewritten in place).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from typing import Any
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, SupportsTriggerAvailableNow

from etl.runtime.file_watch import matching_files

NAME = "etl_file_tail"
CHUNK = 1 << 16
HEAD = 256
KEPT = 1024  # bytes of an oversized line kept for its dead letter (BoundedLines.KEPT)
log = logging.getLogger("etl.file")


class Piece(InputPartition):
    """Bytes [start, end) of the file (device, inode), last seen as `path`."""

    def __init__(self, path: str, dev: int, ino: int, start: int, end: int):
        self.path, self.dev, self.ino, self.start, self.end = path, dev, ino, start, end


def lines_end(path: str, start: int, size: int) -> int:
    """The offset just past the last newline in [start, size) of `path` (start when there is none)."""
    try:
        with open(path, "rb") as f:
            pos = size
            while pos > start:
                lo = max(start, pos - CHUNK)
                f.seek(lo)
                chunk = f.read(pos - lo)
                i = chunk.rfind(b"\n")
                if i >= 0:
                    return lo + i + 1
                pos = lo
    except OSError:  # gone meanwhile: nothing new
        pass
    return start


def head(path: str, n: int) -> str:
    """A fingerprint of the first n bytes of `path` (HEAD of them at most): a file rewritten from its start since
    its lines were read has another one, even when it is as long as before."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha1(f.read(min(n, HEAD))).hexdigest()[:16]
    except OSError:
        return ""


def advance(files: dict[str, dict], now: dict[str, tuple[int, int, int]], source: str) -> dict[str, dict]:
    """The next offset's files from the previous one's and the files now there (name -> device, inode, size)."""
    out: dict[str, dict] = {}
    for name, (dev, ino, size) in sorted(now.items()):
        key = f"{dev}:{ino}"
        prev = files.get(key)
        gen, start = (prev["gen"], prev["end"]) if prev is not None else (0, 0)
        if prev is not None and (size < prev["end"] or head(name, prev["end"]) != prev["head"]):
            log.warning("file source '%s': %s was truncated (%d bytes read, %d now): its lines are read again from "
                        "its start", source, name, prev["end"], size)
            gen, start = gen + 1, 0
        end = lines_end(name, start, size)
        out[key] = {"path": name, "gen": gen, "end": end, "head": head(name, end)}
    return out


def pieces(start: dict, end: dict) -> list[Piece]:
    out = []
    for key, e in sorted(end["files"].items()):
        s = start["files"].get(key)
        begin = s["end"] if s is not None and s["gen"] == e["gen"] else 0
        if e["end"] > begin:
            dev, ino = (int(x) for x in key.split(":"))
            out.append(Piece(e["path"], dev, ino, begin, e["end"]))
    return out


def read_piece(p: Piece, watched: str, column: str, reject: str, cap: int) -> pa.RecordBatch:
    """The lines of piece `p`, found by identity (the folder of `watched` when it was renamed meanwhile)."""
    data = _read_identity(p, p.path)
    if data is None:
        folder = watched if os.path.isdir(watched) else os.path.dirname(watched)
        try:
            names = [e.path for e in os.scandir(folder)]
        except OSError:
            names = []
        for name in names:
            data = _read_identity(p, name)
            if data is not None:
                break
    if data is None:
        log.warning("file source: %s (device %d, inode %d) is gone before bytes %d-%d were read", p.path, p.dev,
                    p.ino, p.start, p.end)
        data = b""
    values, reasons = checked_lines(data, cap)
    return pa.RecordBatch.from_arrays([pa.array(values, pa.string()), pa.array(reasons, pa.string())],
                                      names=[column, reject])


def checked_lines(data: bytes, cap: int) -> tuple[list[str], list[str | None]]:
    """The complete lines of `data` (a CR before the LF dropped) and, per line, why it is rejected (None: it is
    not): over `cap` bytes, or not valid UTF-8; a rejected line's value is its payload."""
    values: list[str] = []
    reasons: list[str | None] = []
    for raw in data.split(b"\n")[:-1]:
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if len(line) > cap:
            kept = _utf8_prefix(line[:KEPT])
            values.append(kept.decode("utf-8", errors="replace"))
            reasons.append(f"record of {len(line)} bytes is over the maximum record size of {cap} bytes "
                           f"(ETL_MAX_RECORD_MB); payload: its first {len(kept)} bytes")
            continue
        try:
            values.append(line.decode("utf-8"))
            reasons.append(None)
        except UnicodeDecodeError as e:
            values.append(base64.b64encode(line).decode("ascii"))
            reasons.append(f"line is not valid UTF-8 (byte 0x{line[e.start]:02X} at offset {e.start}); payload: the "
                           f"line's {len(line)} bytes in base64")
    return values, reasons


def _utf8_prefix(b: bytes) -> bytes:
    """`b` without a character cut at its end (at most 3 bytes fewer)."""
    for cut in range(0, min(4, len(b) + 1)):
        try:
            (b[:len(b) - cut]).decode("utf-8")
            return b[:len(b) - cut]
        except UnicodeDecodeError:
            continue
    return b


def _read_identity(p: Piece, name: str) -> bytes | None:
    try:
        with open(name, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) != (p.dev, p.ino):
                return None
            f.seek(p.start)
            return f.read(p.end - p.start)
    except OSError:
        return None


class TailStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]):
        self.path = options["path"]
        self.source = options["source"]
        self.column = options["column"]
        self.reject = options["reject"]
        self.cap = int(options["maxRecordBytes"])
        self.target: dict | None = None  # AvailableNow: the files' ends when the run started
        self.available_now = False

    def initialOffset(self) -> dict:
        return {"files": {}}

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = True

    def latestOffset(self, start: dict, limit: Any) -> dict:
        if self.available_now and self.target is not None:
            return self.target
        end = {"files": advance(start["files"], matching_files(self.path), self.source)}
        if self.available_now:
            self.target = end
        return end

    def getDefaultReadLimit(self) -> Any:
        return ReadAllAvailable()

    def partitions(self, start: dict, end: dict) -> list[Piece]:
        return pieces(start, end)

    def read(self, partition: Piece) -> Iterator[pa.RecordBatch]:  # type: ignore[override]  # the partitions it made
        yield read_piece(partition, self.path, self.column, self.reject, self.cap)

    def commit(self, end: dict) -> None:
        pass


class TailDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return f"`{self.options['column']}` string, `{self.options['reject']}` string"

    def streamReader(self, schema: Any) -> TailStreamReader:
        return TailStreamReader(self.options)
