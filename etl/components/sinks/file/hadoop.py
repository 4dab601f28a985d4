"""The file sink's batches through Hadoop's FileSystem API: Spark's own file writers on the executors, the
driver's publish over py4j (of a local folder: the same steps through Python's file functions, localfs.py).

A micro-batch is written by Spark's writer (`DataFrameWriter.save`: json for jsonl, or text when the plan
renders the lines in the JVM; csv; parquet) into the batch's staging folder `<path>/_staging/<query>-<batch>-<run>`: every task
writes its part through the Hadoop FileSystem of the path's scheme on its executor, and Spark's
FileOutputCommitter commits the task outputs (task retries are Spark's). The driver then publishes the batch
(`publish`, retried with backoff on I/O errors):

1. `_MANIFEST` in the staging folder (written to a temporary name, then renamed): each staged part and its
   final name `part-<query>-<batch>-<run>-<n>.<ext>`. This is the batch's commit point.
2. each part renamed into `<path>`;
3. the manifest renamed to `<path>/_etl_batches/<query>-<batch>-<run>` (the batch is published), and the
   staging folder removed.

A replay (`recover`) finishes a publish that has its staging manifest, and removes the staging leftovers of a
batch without one (its parts are written again). A reader that takes a batch's parts from its published
manifest never sees a partial batch; a reader listing `part-*` may see a batch's parts appear one rename after
the other during step 2 (no data is written then).
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, TypeVar
from collections.abc import Callable

from etl.connectors.api import WORKER_ENDED, jvm
from etl.dead_letters import ERR, PAYLOAD
from etl.runtime.failure import fault_line
from etl.runtime.sink import TerminalError, TransientError
from etl.workercache import owned_by

if TYPE_CHECKING:
    from etl.components.sinks.file.localfs import LocalFiles

T = TypeVar("T")
SPARK_FORMAT = {"jsonl": "json", "csv": "csv", "parquet": "parquet"}  # jsonl rendered in the JVM first: text
OPTIONS = {"json": {"compression": "none"}, "text": {"compression": "none"},
           "csv": {"header": "true", "compression": "none"}, "parquet": {"compression": "zstd"}}
STAGING = "_staging"
PUBLISHED = "_etl_batches"
MANIFEST = "_MANIFEST"
TERMINAL = ("java.io.FileNotFoundException", "org.apache.hadoop.security.AccessControlException",
            "java.nio.file.AccessDeniedException", "org.apache.hadoop.fs.UnsupportedFileSystemException",
            "org.apache.hadoop.fs.ParentNotDirectoryException", "org.apache.hadoop.fs.FileAlreadyExistsException")


def hadoop_uri(path: str, resolve: Callable[[str], str]) -> str:
    """The sink's folder as a Hadoop URI: a URI as it is, a local path (relative: from the pipeline file) as a
    file:// URI (never the cluster's default file system)."""
    from pathlib import Path
    from urllib.parse import urlparse

    if len(urlparse(path).scheme) > 1:
        return path.rstrip("/")
    return Path(resolve(path)).as_uri()


def java_error(e: Any) -> Exception | None:
    """A py4j error of a Hadoop call or of a Spark write job as TransientError (an I/O error anywhere in its
    causes) or TerminalError (missing, forbidden; a full disk or a damaged checkpoint met by the write job, as
    etl.runtime.failure names them: retrying cannot help); None: not an I/O error (a Python worker that ended is
    not one, though its socket's error is)."""
    chain: list[tuple[list[str], str]] = []
    ex = e.java_exception
    while ex is not None and len(chain) < 20:
        names = []
        cls = ex.getClass()
        while cls is not None:
            names.append(cls.getName())
            cls = cls.getSuperclass()
        msg = f"{names[0]}: {ex.getMessage()}"
        if WORKER_ENDED in msg:  # a Python function ended its worker: the runner's retry (etl.compile.bounds)
            return None
        chain.append((names, msg))
        ex = ex.getCause()
    found = fault_line("\n".join(msg for _, msg in chain))
    if found is not None:
        return TerminalError(found[1])
    for names, msg in chain:
        if any(n in TERMINAL for n in names):
            return TerminalError(msg)
        if "java.io.IOException" in names:
            return TransientError(msg)
    return None


def hadoop_call(op: Callable[[], T]) -> T:
    """`op()`, its Hadoop I/O errors as TransientError or TerminalError."""
    from py4j.protocol import Py4JJavaError

    try:
        return op()
    except Py4JJavaError as e:
        mapped = java_error(e)
        if mapped is None:
            raise
        raise mapped from e


class HadoopFiles:
    """The sink folder's Hadoop FileSystem, as the driver sees it (the session's Hadoop configuration). On a
    checksummed file system (file://) the raw one: published files get no `.crc` companions."""

    def __init__(self, spark: Any, uri: str):
        jvm = self._jvm = spark._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        conf = spark._jsparkSession.sessionState().newHadoopConf()
        self.root = self._path(uri)
        fs = hadoop_call(lambda: self.root.getFileSystem(conf))
        if jvm.java.lang.Class.forName("org.apache.hadoop.fs.ChecksumFileSystem").isInstance(fs):
            fs = fs.getRawFileSystem()
        self.fs = fs
        # classes used per batch, looked up once (each package step of `jvm.a.b.C` is a py4j round trip)
        self._wrap = jvm.scala.collection.immutable.ArraySeq
        self._stat2paths = jvm.org.apache.hadoop.fs.FileUtil
        self._paths: dict[str, Any] = {}  # the paths of the batch being written (one py4j call each)

    def path(self, rel: str) -> Any:
        """The Path of `rel` under the sink's folder; the folders a batch uses again and again are made once per
        batch (`forget` at its end)."""
        got = self._paths.get(rel)
        if got is None:
            if len(self._paths) >= 64:  # a caller that never calls `forget`
                self._paths.clear()
            got = self._paths[rel] = self._path(self.root, rel)
        return got

    def uri(self, rel: str) -> str:
        """`rel` under the sink's folder as the URI Spark's writer is given."""
        return str(self.path(rel).toString())

    def forget(self) -> None:
        """A batch is done: its paths go (the JVM objects are released with them)."""
        self._paths.clear()

    def call(self, op: Callable[[], T]) -> T:
        return hadoop_call(op)

    def exists(self, rel: str) -> bool:
        return bool(self.call(lambda: self.fs.exists(self.path(rel))))

    def names(self, rel: str) -> list[str]:
        """File names in a folder (none when it is missing), hidden ones (`.`, `_`) left out. A constant number of
        py4j round trips however many files: the paths come back as one string."""
        from py4j.protocol import Py4JJavaError

        p = self.path(rel)
        try:
            statuses = self.fs.listStatus(p)
        except Py4JJavaError as e:
            if e.java_exception.getClass().getName() == "java.io.FileNotFoundException":
                return []
            mapped = java_error(e)
            if mapped is None:
                raise
            raise mapped from e
        # (py4j passes a Path[] to no Object[] parameter; Scala's ArraySeq wraps any array)
        paths = self._wrap.unsafeWrapArray(self._stat2paths.stat2Paths(statuses))
        lines = str(paths.mkString("\n")).split("\n")
        if len(lines) != paths.length():  # a newline in the folder's path: one call per file then
            lines = [paths.apply(i).toString() for i in range(paths.length())]
        return sorted(n for n in (line.rsplit("/", 1)[-1] for line in lines if line)
                      if not n.startswith((".", "_")))

    def delete(self, rel: str) -> None:
        self.call(lambda: self.fs.delete(self.path(rel), True))

    def remove_empty(self, rel: str) -> None:
        """Remove a folder when it is empty (another batch may be staging there: then it stays)."""
        p = self.path(rel)
        with contextlib.suppress(TransientError):  # not empty
            self.call(lambda: self.fs.delete(p, False))  # refused (an IOException) when not empty

    def mkdirs(self, rel: str) -> None:
        p = self.path(rel)
        if not self.call(lambda: self.fs.mkdirs(p)):
            raise TerminalError(f"cannot create {p.toString()}")

    def rename(self, src: str, dst: str) -> None:
        """Rename into an existing folder; an error unless it happened (a rename's False is a failure)."""
        source, target = self.path(src), self.path(dst)
        if not self.call(lambda: self.fs.rename(source, target)):
            raise TransientError(f"rename of {source.toString()} to {target.toString()} failed")

    def write_text(self, rel: str, text: str) -> None:
        """A new small file written under a temporary name (replacing a crashed try's) and renamed: never seen
        half written."""
        tmp = rel + ".tmp"

        def write() -> None:
            out = self.fs.create(self.path(tmp), True)
            try:
                out.write(bytearray(text.encode()))
            finally:
                out.close()

        self.call(write)
        self.rename(tmp, rel)

    def length(self, rel: str) -> int:
        return int(self.call(lambda: self.fs.getFileStatus(self.path(rel)).getLen()))

    def parquet_rows(self, rel: str) -> int:
        """The rows of a parquet file, from its footer."""
        def read() -> int:
            parquet = self._jvm.org.apache.parquet.hadoop
            reader = parquet.ParquetFileReader.open(parquet.util.HadoopInputFile.fromPath(self.path(rel),
                                                                                          self.fs.getConf()))
            try:
                return int(reader.getRecordCount())
            finally:
                reader.close()

        return self.call(read)

    def read_text(self, rel: str) -> str:
        def read() -> str:
            stream = self.fs.open(self.path(rel))
            try:
                jvm_bytes = stream.readAllBytes()
            finally:
                stream.close()
            return bytes(jvm_bytes).decode()

        return self.call(read)


def count_engine(spark: Any, planned: str | None) -> str:
    """The physical plan's `count` engine (etl.physical); None (a sink the plan does not list, e.g. the dead-letter
    sink): batchrows-jvm where the session has etl's jar, else observe."""
    if planned is not None:
        return planned
    return "batchrows-jvm" if jvm.available(spark) else "observe"


def batchrows_count(frame: Any, fmt: str, uri: str, select: str | None, split: bool,
                    name: str) -> tuple[int, list[tuple[str | None, str | None]]]:
    """The rows written, counted by a filter of the write (etl/jvm/BatchRows.java: accumulators, in the generated
    code), and, with `split`, the failed rows set aside by it: the filter, the shaping and Spark's writer in one py4j
    call (`BatchRows.written`), the tally in one more."""
    sc = frame.sparkSession.sparkContext
    facts = owned_by(sc)
    if facts.get("BatchRows.written") is None:  # (each step of `jvm.etl.jvm.BatchRows.written` is a round trip)
        facts["BatchRows.written"] = sc._jvm.etl.jvm.BatchRows.written
    tally = facts["BatchRows.written"](frame._jdf, ERR if split else None, PAYLOAD if split else None, select, fmt,
                                       uri, "".join(f"{k}={v}\n" for k, v in OPTIONS[fmt].items()))
    rows, failed = json.loads(tally.json())
    return int(rows), [(e, p) for e, p in failed]


def observed_count(frame: Any, fmt: str, uri: str, select: str | None, split: bool,
                   name: str) -> tuple[int, list[tuple[str | None, str | None]]]:
    """The same through DataFrame.observe (no etl jar): its aggregation runs beside the write, outside the
    generated code."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    obs = Observation(name)
    # (SQL text rather than Column calls: each Column call is py4j round trips, and this runs per micro-batch)
    if split:
        failed_row = f"named_struct('err', CAST(`{ERR}` AS STRING), 'payload', CAST(`{PAYLOAD}` AS STRING))"
        rows = frame.observe(obs, F.expr(f"count(CASE WHEN `{ERR}` IS NULL THEN 1 END) AS rows"),
                             F.expr(f"collect_list(CASE WHEN `{ERR}` IS NOT NULL THEN {failed_row} END) AS failed"))
        rows = rows.where(f"`{ERR}` IS NULL").drop(ERR, PAYLOAD)
    else:
        rows = frame.observe(obs, F.expr("count(1) AS rows"))
    shaped = rows if select is None else rows.selectExpr(select)
    shaped.write.format(fmt).options(**OPTIONS[fmt]).mode("overwrite").save(uri)
    got = obs.get
    return int(got["rows"]), [(r["err"], r["payload"]) for r in got.get("failed") or []]


COUNTS = {"batchrows-jvm": batchrows_count, "observe": observed_count}


def spark_write(frame: Any, fmt: str, uri: str, name: str, select: str | None, split: bool,
                count: str) -> tuple[int, list[tuple[str | None, str | None]]]:
    """Write the rows of `frame` (shaped by the SQL `select`, if any) with Spark's writer `fmt` (json, text, csv,
    parquet) into the folder `uri` (replacing what a failed try left); returns the rows written and, with `split`,
    the rows a stage failed on (ERR set: not written), both counted while writing (one pass: the stage runs once)
    by the `count` engine (batchrows-jvm or observe, the physical plan's)."""
    return COUNTS[count](frame, fmt, uri, select, split, name)


class Publisher:
    """The driver's side of one sink's batches: where they are staged, their publish and its recovery."""

    def __init__(self, files: HadoopFiles | LocalFiles, query: str, tag: str, ext: str):
        self.files = files
        self.query = query
        self.tag = tag
        self.ext = ext
        self._published_dir = False  # `_etl_batches/` made (once per sink)
        self._cleared: int | None = None  # the batch whose staging leftovers `recover` has just removed

    def batch_name(self, batch_id: int) -> str:
        return f"{self.query}-{batch_id:08d}-{self.tag}"

    def staging(self, batch_id: int) -> str:
        return f"{STAGING}/{self.batch_name(batch_id)}"

    def published(self, batch_id: int) -> str:
        return f"{PUBLISHED}/{self.batch_name(batch_id)}"

    def clear(self, batch_id: int) -> None:
        """Remove a staging folder a crashed attempt left (its parts are written again)."""
        if self.files.exists(self.staging(batch_id)):
            self.files.delete(self.staging(batch_id))

    def prepare(self, batch_id: int) -> None:
        """Before the write: no leftovers (unless `recover` just removed them), and the staging folder's parent
        exists (else the path is wrong)."""
        if self._cleared != batch_id:
            self.clear(batch_id)
        self._cleared = None  # a second try of the write clears what the first left
        self.files.mkdirs(STAGING)

    def commit(self, batch_id: int, rows: int) -> None:
        """Write the manifest (the commit point), then publish. A batch without rows publishes nothing."""
        stage = self.staging(batch_id)
        parts = [p for p in self.files.names(stage) if not self._no_rows(stage, p)] if rows else []
        lines = [f"{p} part-{self.batch_name(batch_id)}-{n:05d}.{self.ext}" for n, p in enumerate(parts)]
        self.files.write_text(f"{stage}/{MANIFEST}", "".join(x + "\n" for x in lines))
        self.finish(batch_id, lines)

    def _no_rows(self, stage: str, part: str) -> bool:
        """Spark's writer leaves a file for its partition 0 even when that partition has no rows (an empty job
        still writes one: parquet's schema); beside other parts it holds none: empty, csv's header alone, or a
        parquet footer of 0 rows. It is not published (it goes with the staging folder)."""
        if not part.startswith("part-00000-"):
            return False
        if self.ext == "parquet":
            return self.files.parquet_rows(f"{stage}/{part}") == 0
        size = self.files.length(f"{stage}/{part}")
        if size == 0 or self.ext != "csv":
            return size == 0
        return size <= 65536 and self.files.read_text(f"{stage}/{part}").count("\n") <= 1  # a row ends a line too

    def finish(self, batch_id: int, lines: list[str] | None = None) -> None:
        """Steps 2 and 3: every part not yet renamed, then the published manifest; idempotent. `lines`: the
        manifest just written (every part still staged); None: read it (a recovery: some may be renamed)."""
        stage = self.staging(batch_id)
        recovering = lines is None
        if lines is None:
            lines = self.files.read_text(f"{stage}/{MANIFEST}").splitlines()
        for line in lines:
            src, dst = line.split(" ")
            if not recovering or self.files.exists(f"{stage}/{src}"):
                self.files.rename(f"{stage}/{src}", dst)
        if not self._published_dir:
            self.files.mkdirs(PUBLISHED)
            self._published_dir = True
        self.files.rename(f"{stage}/{MANIFEST}", self.published(batch_id))
        self.files.delete(stage)
        self.files.remove_empty(STAGING)
        self.files.forget()

    def recover(self, batch_id: int) -> bool:
        """Before a batch is written: True when it is published (a publish a crash cut short is finished);
        otherwise its staging leftovers are removed."""
        self.files.forget()  # the paths of the batches before
        stage = self.staging(batch_id)
        if self.files.exists(self.published(batch_id)):
            self.clear(batch_id)
            return True
        if self.files.exists(f"{stage}/{MANIFEST}"):
            self.finish(batch_id)
            return True
        self.clear(batch_id)
        self._cleared = batch_id
        return False
