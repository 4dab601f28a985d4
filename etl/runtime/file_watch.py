"""What the file source does not handle, seen from the driver: renamed, grown, truncated and recreated files.

The file source is Spark's file stream source: it reads each file once, whole, when a listing first shows
its path, and remembers paths, not files. So a file renamed to a name the source also matches is read again
(its lines twice: logrotate's default `create` into a watched folder); lines appended to a file after it was
read, and lines written to a truncated file (`copytruncate`) or to a file recreated under a name already read,
are never read. etl does not read them either: it says so, once per file and kind, naming the file
(docs/pipeline-format.md "Sources": what the file source guarantees).

`FileWatch` keeps each matching file's identity (device, inode) and size, and compares them at every
micro-batch of the run (PipelineRun), and remembers every name it saw (a name read once is never read again).
Changes made while etl is not running are not seen.
"""

from __future__ import annotations

import glob
import logging
import os
import stat
import threading
from dataclasses import dataclass, field

log = logging.getLogger("etl.file")


def matching_files(path: str) -> dict[str, tuple[int, int, int]]:
    """The regular files a file source reads at `path` (a file, a folder: its files but hidden and underscore
    names, as Spark's file source skips them; or a glob): name -> (device, inode, size)."""
    if any(ch in path for ch in "*?["):
        names = glob.glob(path)
    elif os.path.isdir(path):
        try:
            names = [e.path for e in os.scandir(path) if not e.name.startswith((".", "_"))]
        except OSError:  # the folder went (or cannot be listed): no files now
            names = []
    else:
        names = [path]
    out = {}
    for name in names:
        try:
            st = os.stat(name)
        except OSError:  # gone between the listing and the stat
            continue
        if stat.S_ISREG(st.st_mode):
            out[name] = (st.st_dev, st.st_ino, st.st_size)
    return out


@dataclass
class FileWatch:
    """The files a streamed file source matches (`path`: a file, a folder or a glob), watched for what it misses."""

    source: str
    path: str
    seen: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # name -> (device, inode, size) last check
    known: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # every name seen, as it was last seen
    said: set[tuple[str, str, int]] = field(default_factory=set)  # (kind, name, inode) warned once
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self) -> list[str]:
        """Compare the files with the last check; the warnings (new ones only) are logged and returned."""
        with self._lock:
            now = matching_files(self.path)
            before, self.seen = self.seen, now
            where = {(d, i): name for name, (d, i, _) in before.items()}
            said = []
            for name, (dev, ino, size) in sorted(now.items()):
                old = self.known.get(name)
                renamed_from = where.get((dev, ino))
                if old is not None and old[:2] != (dev, ino):
                    said += self._say("recreated", name, ino,
                                      f"{name} was replaced by a new file of the same name: the file source reads a "
                                      f"name once, so the new file's lines are not read (rotate to new names, e.g. "
                                      f"logrotate's dateext, or into a folder the source does not watch)")
                elif old is not None and size < old[2]:
                    said += self._say("truncated", name, ino,
                                      f"{name} was truncated ({old[2]} -> {size} bytes): the file source read it "
                                      f"once, so lines written to it from now on are not read (copytruncate is not "
                                      f"supported: rotate by renaming)")
                elif old is not None and size > old[2]:
                    said += self._say("grew", name, ino,
                                      f"{name} grew after it appeared ({old[2]} -> {size} bytes): the file source "
                                      f"reads a file once, when it first lists it, so lines appended after that are "
                                      f"not read (write a file elsewhere and move it into the folder when complete)")
                elif old is None and renamed_from is not None and now.get(renamed_from, ())[:2] != (dev, ino):
                    said += self._say("renamed", name, ino,
                                      f"{renamed_from} was renamed to {name}, which the source also reads: the file "
                                      f"source keys files by name, so it reads {name} again, as a new file (its lines "
                                      f"twice; rotate into a folder the source does not watch)")
            self.known.update(now)
            return said

    def _say(self, kind: str, name: str, inode: int, message: str) -> list[str]:
        if (kind, name, inode) in self.said:
            return []
        self.said.add((kind, name, inode))
        text = f"file source '{self.source}': {message}"
        log.warning("%s", text)
        return [text]
