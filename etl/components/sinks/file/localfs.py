"""The driver's publish of a local sink folder (a `file:` URI) with Python's file functions: the same operations as
etl/components/sinks/file/hadoop.py's HadoopFiles, without a py4j round trip each (a publish made about 30 a
micro-batch, issue 42: etl's fixed cost per batch over plain Spark's).

On a `file:` URI the driver's Hadoop FileSystem is the local one (RawLocalFileSystem: `rename` is rename(2), no
`.crc` companions), so these are the same calls on the same files. Errors are mapped as HadoopFiles maps Hadoop's:
missing, forbidden, a file where a folder is expected -> TerminalError; any other I/O error -> TransientError; a
failed rename -> TransientError (Hadoop's rename answers False).
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import TypeVar
from collections.abc import Callable

from etl.runtime.sink import TerminalError, TransientError

T = TypeVar("T")
TERMINAL = (FileNotFoundError, PermissionError, NotADirectoryError, FileExistsError)


class LocalFiles:
    """A local sink folder, as HadoopFiles offers one to the Publisher (paths relative to the folder)."""

    def __init__(self, folder: str):
        self.root = Path(folder)

    def uri(self, rel: str) -> str:
        """`rel` as a URI Spark's writer resolves to the same folder (`file:` and the path unescaped, as Hadoop's
        Path reads it)."""
        return f"file:{self.root / rel}"

    def forget(self) -> None:
        """(HadoopFiles releases its JVM paths here; nothing is kept.)"""

    def call(self, op: Callable[[], T]) -> T:
        try:
            return op()
        except OSError as e:
            raise _mapped(e) from e

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def names(self, rel: str) -> list[str]:
        """File names in a folder (none when it is missing), hidden ones (`.`, `_`) left out."""
        try:
            found = os.listdir(self.root / rel)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise _mapped(e) from e
        return sorted(n for n in found if not n.startswith((".", "_")))

    def delete(self, rel: str) -> None:
        p = self.root / rel

        def delete() -> None:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)

        self.call(delete)

    def remove_empty(self, rel: str) -> None:
        """Remove a folder when it is empty (another batch may be staging there: then it stays)."""
        try:
            os.rmdir(self.root / rel)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                raise _mapped(e) from e

    def mkdirs(self, rel: str) -> None:
        p = self.root / rel
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # (as the Hadoop path says it; its kind kept: a full disk may clear, a bad path not)
            raise _kind(e)(f"cannot create {p}: {e.strerror or e}") from e

    def rename(self, src: str, dst: str) -> None:
        """Rename into an existing folder (replacing a file of that name, as rename(2) does)."""
        source, target = self.root / src, self.root / dst
        try:
            os.rename(source, target)
        except OSError as e:
            raise TransientError(f"rename of {source} to {target} failed: {e.strerror or e}") from e

    def write_text(self, rel: str, text: str) -> None:
        """A new small file written under a temporary name (replacing a crashed try's) and renamed: never seen
        half written."""
        tmp = rel + ".tmp"
        self.call(lambda: (self.root / tmp).write_bytes(text.encode()))
        self.rename(tmp, rel)

    def length(self, rel: str) -> int:
        return self.call(lambda: (self.root / rel).stat().st_size)

    def parquet_rows(self, rel: str) -> int:
        """The rows of a parquet file, from its footer."""
        import pyarrow.parquet as pq

        return self.call(lambda: int(pq.ParquetFile(self.root / rel).metadata.num_rows))

    def read_text(self, rel: str) -> str:
        return self.call(lambda: (self.root / rel).read_text())


def _kind(e: OSError) -> type[TerminalError] | type[TransientError]:
    return TerminalError if isinstance(e, TERMINAL) else TransientError


def _mapped(e: OSError) -> Exception:
    return _kind(e)(f"{e.filename}: {e.strerror or e}")


def local_folder(uri: str) -> str | None:
    """The local folder of a `file:` URI (None: another scheme or a remote host)."""
    from urllib.parse import unquote, urlparse

    u = urlparse(uri)
    return unquote(u.path) if u.scheme == "file" and u.netloc in ("", "localhost") else None
