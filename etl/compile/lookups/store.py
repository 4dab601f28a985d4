"""Dimension tables in rocksdict stores on local disk, for lookup joins of large tables.

Layout under `<base>/<table>-<hash of format, path and columns>/`:
    <version>/db/          the rocksdict store (raw mode: bytes -> bytes, zstd)
    <version>/schema.arrow the chunks' Arrow schema: the key as text, then the value columns
    <version>/meta.json    row and chunk counts, sizes, whether a key has several rows
    .lock                  build lock shared by every process of the host
Rows are ordered by a 64-bit hash of their key (etl.compile.keyhash; the key as
text, several key columns joined by \x1f) and cut into chunks of about
CHUNK_ROWS rows, a key's rows never split; each chunk is one entry, an Arrow
record batch in its own types (`c` + chunk number), and two entries index
them (`i:bounds`: each chunk's first hash; `i:starts`: its first row).

A worker reads a chunk the first time one of its keys is looked up and keeps it
decoded (LookupStore): a batch of keys is hashed, sorted, and found by binary
search over the hashes of the rows in memory, then compared with the stored
keys (a hash collision never matches). Once the whole table is in memory,
the chunks are joined and a batch's matches are gathered with one `take`.

A store is built once per (table, version) per host: from an SST file
(SstFileWriter + ingest, no compaction), in a temporary folder renamed into
place, so readers only ever see complete versions. Each Python worker keeps the
stores it opened in a per-process cache keyed by table + version; `store_for`
re-checks the source every `refresh_s` and swaps to a newer version once it is
built (in a background thread, under the host lock) -- the previous version
keeps answering meanwhile, so the query never stops.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from etl import settings
from etl.compile.keyhash import key_hashes
from etl.diskcache import private_tmp
from etl.workercache import WorkerCache

KEY_SEP = "\x1f"
KEY_COLUMN = "_etl_key"
FORMAT = 2  # of the stores: a store of another format is never opened (its folder name differs)
CHUNK_ROWS = 4096  # ETL_LOOKUP_CHUNK_ROWS (etl.settings): a TableSource carries the driver's value
BLOCK_SIZE = 16 * 1024
# Decoded chunks kept per process and store: 0 sizes it to hold the whole table (the raw size recorded at build
# time, up to MAX_AUTO_CACHE_MB), so that after warm-up a lookup reads nothing; a number fixes it.
# ETL_LOOKUP_CACHE_MB / ETL_LOOKUP_MAX_CACHE_MB (etl.settings) set them: a TableSource carries the driver's.
DEFAULT_CACHE_MB = 0
MAX_AUTO_CACHE_MB = 2048
MIN_CACHE_MB = 32


def cache_size_mb(requested: int, meta: dict, max_auto_mb: int = MAX_AUTO_CACHE_MB) -> int:
    """The decoded-chunk cache for a store: `requested` MB, or (0) its raw chunk bytes with some room."""
    if requested > 0:
        return requested
    raw_mb = meta.get("raw_mb")
    if raw_mb is None:  # built before raw sizes were recorded
        return 256
    return int(min(max_auto_mb, max(MIN_CACHE_MB, raw_mb * 1.25 + 8)))


def default_base_dir() -> str:
    """ETL_LOOKUP_DIR, else this user's private <tmp>/etl-lookup-<uid> (never one another user made first)."""
    return settings.current().lookup_dir or str(private_tmp("etl-lookup"))


@dataclass(frozen=True)
class TableSource:
    """Where a dimension table comes from, as executors see it (picklable).

    format: csv | jsonl | parquet (a file or folder read with pyarrow), or
    snapshot (a folder of versioned parquet snapshots written by the driver,
    the current one named by its LATEST file)."""

    name: str
    path: str
    format: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    schema: Any = None  # pyarrow.Schema of keys + values (keys as strings)
    header: bool = True
    delimiter: str = ","
    refresh_s: float | None = None
    base_dir: str = field(default_factory=default_base_dir)
    # the driver's settings, made with it and shipped with it (executors build and open the stores)
    cache_mb: int = field(default_factory=lambda: settings.current().lookup_cache_mb)
    max_cache_mb: int = field(default_factory=lambda: settings.current().lookup_max_cache_mb)
    chunk_rows: int = field(default_factory=lambda: settings.current().lookup_chunk_rows)

    def cache_key(self) -> str:
        """Identity in per-process caches: two lookups of one table with other columns differ."""
        return "\0".join([self.name, self.path, self.format, ",".join(self.keys), ",".join(self.values),
                           str(self.schema), self.base_dir])


# ------------------------------------------------------------------ reading
def table_files(path: str, suffixes: tuple[str, ...]) -> list[str]:
    p = Path(path)
    if p.is_dir():
        return sorted(str(f) for f in p.rglob("*") if f.is_file() and f.name.endswith(suffixes)
                      and not f.name.startswith(("_", ".")))
    return [str(p)]


def snapshot_dir(src: TableSource) -> str:
    latest = Path(src.path) / "LATEST"
    return str(Path(src.path) / latest.read_text().strip())


def source_version(src: TableSource) -> str:
    """Changes whenever the table's content may have changed."""
    if src.format == "snapshot":
        return (Path(src.path) / "LATEST").read_text().strip()
    h = hashlib.sha1()
    for f in table_files(src.path, (".csv", ".json", ".jsonl", ".parquet", ".txt", "")):
        try:
            st = os.stat(f)
            h.update(f"{f}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns};".encode())
        except OSError as e:  # gone or unreadable: a version of its own, which read_table reports
            h.update(f"{f}:{e.strerror};".encode())
    h.update(repr((src.keys, src.values, str(src.schema))).encode())
    return h.hexdigest()[:16]


class TableUnreadable(ValueError):
    """A dimension table's files do not read as the table: empty, not parsable, without its columns, or changed
    while they were read. At start a positioned E400 at the table's `path:`; on a refresh the last good version
    keeps answering (`keep_last_good`)."""

    def __init__(self, file: str, reason: str):
        super().__init__(f"{file}: {reason}")
        self.file, self.reason = file, reason


def read_table(src: TableSource) -> Any:
    """The table as Arrow: key columns as strings, value columns in `src.schema` types. Every reader of a file
    table goes through here: a file that does not read as the table raises TableUnreadable."""
    import pyarrow as pa

    before = None if src.format == "snapshot" else source_version(src)
    try:
        table = _read(src)
    except (pa.ArrowException, OSError, UnicodeError) as e:
        raise TableUnreadable(getattr(e, "etl_file", src.path), " ".join(str(e).split())[:300]) from None
    missing = [c for c in src.keys + src.values if c not in table.column_names]
    if missing:
        raise TableUnreadable(src.path, f"no column(s) {', '.join(missing)} (columns: {', '.join(table.column_names)})")
    if before is not None and source_version(src) != before:
        raise TableUnreadable(src.path, "changed while it was read")
    return table


def _read(src: TableSource) -> Any:
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    types = {f.name: f.type for f in src.schema} if src.schema is not None else {}
    for k in src.keys:
        types[k] = pa.string()

    def each(suffixes: tuple[str, ...], read: Any) -> Any:
        files = table_files(src.path, suffixes)
        if not files:
            raise TableUnreadable(src.path, "the folder holds no table file")
        parts = []
        for f in files:
            try:
                if os.path.getsize(f) == 0:
                    raise TableUnreadable(f, "the file is empty (0 bytes)")
                parts.append(read(f))
            except (pa.ArrowException, OSError, UnicodeError) as e:
                e.etl_file = f  # type: ignore[union-attr]
                raise
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    if src.format == "csv":
        def read_csv(f: str) -> Any:
            ro = pcsv.ReadOptions(block_size=64 << 20, autogenerate_column_names=not src.header)
            return pcsv.read_csv(f, read_options=ro, parse_options=pcsv.ParseOptions(delimiter=src.delimiter),
                                 convert_options=pcsv.ConvertOptions(column_types=types,
                                                                     include_columns=list(src.keys + src.values),
                                                                     strings_can_be_null=True,
                                                                     quoted_strings_can_be_null=False))

        table = each((".csv", ".txt"), read_csv)
    elif src.format == "jsonl":
        table = each((".json", ".jsonl"), pjson.read_json)
    elif src.format in ("parquet", "snapshot"):
        if src.format == "snapshot":
            table = pq.read_table(snapshot_dir(src))
        else:  # a folder is one dataset (its partition columns too)
            table = each(("",), pq.read_table) if os.path.isfile(src.path) else pq.read_table(src.path)
    else:
        raise ValueError(f"cannot read a {src.format} table")
    if any(c not in table.column_names for c in src.keys + src.values):
        return table  # read_table names the missing columns
    table = table.select(list(src.keys + src.values))
    target = pa.schema([pa.field(c, types.get(c, table.schema.field(c).type)) for c in table.column_names])
    return table.cast(target)


# (table, version) -> why it did not read: warned once per process (the last 1,024 kept)
_BAD: WorkerCache[tuple[str, str], str] = WorkerCache("lookup table versions that did not read", 1024)
log = logging.getLogger("etl.lookup")


def known_bad(src: TableSource, version: str) -> bool:
    """`version` of the table failed to read in this process already (it is not read again)."""
    return (src.cache_key(), version) in _BAD


def keep_last_good(src: TableSource, version: str, err: TableUnreadable) -> None:
    """A refresh found `version` unreadable: the last good version keeps answering; warned once per version."""
    if (src.cache_key(), version) not in _BAD:
        _BAD[(src.cache_key(), version)] = str(err)
        log.warning("lookup table '%s': the new version of %s does not read as a table (%s): the last good version "
                    "keeps answering until it does", src.name, err.file, err.reason)


def last_good_file(src: TableSource) -> Path:
    """This host's copy of the last table a Python worker read well (broadcast lookups with refresh)."""
    return table_dir(src) / "last-good.parquet"


def remember_good(src: TableSource, table: Any) -> None:
    import pyarrow.parquet as pq

    dest = last_good_file(src)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{os.getpid()}-{threading.get_ident()}"
    pq.write_table(table, str(tmp))
    os.replace(tmp, dest)


def recall_good(src: TableSource) -> Any:
    """The last good table read on this host, or None."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(str(last_good_file(src)))
    except FileNotFoundError:
        return None


def key_array(table: Any, keys: tuple[str, ...] | list[str]) -> Any:
    """Join keys as text: one column cast to string, several joined by \\x1f (NULL when one is NULL)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = [pc.cast(table.column(k), pa.string()) for k in keys]
    if len(cols) == 1:
        return cols[0]
    return pc.binary_join_element_wise(*cols, KEY_SEP)


# ------------------------------------------------------------------- building
def _options() -> Any:
    from rocksdict import BlockBasedOptions, DBCompressionType, Options

    opt = Options(raw_mode=True)
    opt.create_if_missing(True)
    opt.set_compression_type(DBCompressionType.zstd())
    bbo = BlockBasedOptions()
    bbo.set_block_size(BLOCK_SIZE)
    bbo.disable_cache()  # a chunk is read once per process and kept decoded (LookupStore); no block cache
    opt.set_block_based_table_factory(bbo)
    return opt


def dir_mb(path: str | Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 1e6


def _chunk_key(i: int) -> bytes:
    return b"c" + i.to_bytes(4, "big")


def _cuts(h: np.ndarray, rows: int) -> list[int]:
    """Chunk starts every ~`rows` rows, never between two equal hashes (a key's rows share a chunk)."""
    cuts, p = [0], rows
    while p < len(h):
        while p < len(h) and h[p] == h[p - 1]:
            p += 1
        if p < len(h):
            cuts.append(p)
        p += rows
    return cuts + [len(h)]


def build_store(table: Any, keys: tuple[str, ...], dest: str | Path, chunk_rows: int | None = None) -> dict:
    """Write `table` (keys + value columns) as a store at `dest` (must not exist); returns its meta."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from rocksdict import Rdict, SstFileWriter

    dest = Path(dest)
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t0 = time.time()
    k = key_array(table, keys)
    valid = pc.is_valid(k)
    if not pc.all(valid).as_py():
        table, k = table.filter(valid), k.filter(valid)
    if isinstance(k, pa.ChunkedArray):
        k = k.combine_chunks()
    h = key_hashes(k)
    order = np.argsort(h, kind="stable")  # a key's rows keep their table order
    h = h[order]
    take = pa.array(order)
    values = table.drop_columns(list(keys)).take(take)
    rows = pa.table([k.take(take)] + list(values.columns), names=[KEY_COLUMN] + values.column_names).combine_chunks()
    same = np.flatnonzero(h[1:] == h[:-1])
    dup = bool(same.size) and pc.any(pc.equal(rows.column(0).take(pa.array(same)),
                                              rows.column(0).take(pa.array(same + 1)))).as_py()
    cuts = _cuts(h, chunk_rows or CHUNK_ROWS)
    opt = _options()
    sst = tmp / "data.sst"
    w = SstFileWriter(opt)
    w.open(str(sst))
    raw = 0
    for i in range(len(cuts) - 1):
        part = rows.slice(cuts[i], cuts[i + 1] - cuts[i]).to_batches()
        blob = (part[0] if len(part) == 1 else pa.Table.from_batches(part).combine_chunks().to_batches()[0]).serialize()
        raw += blob.size
        w[_chunk_key(i)] = blob.to_pybytes()
    w[b"i:bounds"] = h[np.asarray(cuts[:-1], dtype=np.int64)].astype("<u8").tobytes()
    w[b"i:starts"] = np.asarray(cuts, dtype="<i8").tobytes()
    w.finish()
    db = Rdict(str(tmp / "db"), opt)
    db.ingest_external_file([str(sst)])
    db.close()
    sst.unlink(missing_ok=True)
    meta = {"format": FORMAT, "rows": len(h), "keys": list(keys), "columns": values.column_names, "duplicates": dup,
            "unique_hashes": not same.size,
            "chunks": len(cuts) - 1, "build_s": round(time.time() - t0, 3), "store_mb": round(dir_mb(tmp / "db"), 3),
            "raw_mb": round(raw / 1e6, 3)}
    (tmp / "schema.arrow").write_bytes(rows.schema.serialize().to_pybytes())
    (tmp / "meta.json").write_text(json.dumps(meta))
    os.replace(tmp, dest)
    return meta


# -------------------------------------------------------------------- reading
class LookupStore:
    """A built store opened read-only (several processes may open one).

    Chunks are read on first use and kept decoded, up to the cache size (least recently used
    chunks go first); once every chunk is in memory they are joined into one table, so that a
    batch's matches are gathered with one `take` per column."""

    def __init__(self, path: str | Path, cache_mb: int = DEFAULT_CACHE_MB, max_auto_mb: int = MAX_AUTO_CACHE_MB):
        import pyarrow as pa
        from rocksdict import AccessType, Rdict

        self.path = Path(path)
        self.meta = json.loads((self.path / "meta.json").read_text())
        self.chunk_schema = pa.ipc.read_schema(pa.py_buffer((self.path / "schema.arrow").read_bytes()))
        self.schema = pa.schema(list(self.chunk_schema)[1:])  # the value columns
        opt = _options()
        # the default column family named with the same options: else rocksdict opens it with the options
        # recorded on disk (with an 8 MB block cache that would only copy what is kept decoded here)
        self.db = Rdict(str(self.path / "db"), opt, column_families={"default": opt},
                        access_type=AccessType.read_only())
        if self.meta["chunks"]:
            # (rocksdict's stubs type `[]` Optional: it raises KeyError instead)
            self.bounds = np.frombuffer(self.db[b"i:bounds"], "<u8").astype(np.uint64)  # type: ignore[arg-type]
            self.starts = np.frombuffer(self.db[b"i:starts"], "<i8").astype(np.int64)  # type: ignore[arg-type]
        else:
            self.bounds, self.starts = np.empty(0, np.uint64), np.zeros(1, np.int64)
        # every row's hash, in store order; a chunk not in memory holds its first hash throughout,
        # which keeps the array sorted (lookups only search chunks they loaded)
        self.hashes = np.repeat(self.bounds, np.diff(self.starts))
        self.cache_bytes = cache_size_mb(cache_mb, self.meta, max_auto_mb) << 20
        self._chunks: OrderedDict[int, Any] = OrderedDict()
        self._sizes: dict[int, int] = {}
        self._bytes = 0
        self.table: Any = None  # every chunk, joined, once all are in memory
        self.reads = 0  # chunks read from disk (a chunk evicted and read again counts twice)

    def lookup(self, keys: Any, keep_unmatched: bool = False) -> tuple[np.ndarray, Any]:
        """The rows whose key equals keys[i]: (i of every match, ascending; an Arrow table of the value
        columns, one row per match). A key with several rows gives them in table order; NULL keys match
        nothing. keep_unmatched: every i appears, with NULL values when nothing matches (a left join)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        n = len(keys)
        q = key_hashes(keys)
        cand = np.flatnonzero(pc.is_valid(keys).to_numpy(zero_copy_only=False)) if keys.null_count else \
            np.arange(n, dtype=np.int64)
        order = cand[np.argsort(q[cand], kind="stable")]  # sorted needles: the searches walk forward
        qs = q[order]
        chunk = np.searchsorted(self.bounds, qs, "right") - 1
        inside = chunk >= 0
        self._load(np.unique(chunk[inside]))
        left = np.searchsorted(self.hashes, qs, "left")
        if self.meta["unique_hashes"]:  # at most one row per hash: no second search
            found = inside & (left < len(self.hashes))
            found[found] = self.hashes[left[found]] == qs[found]
            events, pos = order[found], left[found]
        else:
            count = np.where(inside, np.searchsorted(self.hashes, qs, "right") - left, 0)
            events = np.repeat(order, count)
            pos = np.arange(len(events), dtype=np.int64) + np.repeat(left - (np.cumsum(count) - count), count)
        same = pc.equal(self._take(pos, [0]).column(0), keys.take(pa.array(events)))
        same = same.to_numpy(zero_copy_only=False)
        if not same.all():  # hash collisions between different keys
            events, pos = events[same], pos[same]
        if self.meta["unique_hashes"]:  # an event matches once at most: place matches without sorting
            at = np.full(n, -1, dtype=np.int64)
            at[events] = pos
            events = np.arange(n, dtype=np.int64) if keep_unmatched else np.flatnonzero(at >= 0)
            pos = at[events]
        else:
            if keep_unmatched:
                hit = np.zeros(n, dtype=bool)
                hit[events] = True
                missed = np.flatnonzero(~hit)
                events = np.concatenate([events, missed])
                pos = np.concatenate([pos, np.full(len(missed), -1, dtype=np.int64)])
            perm = np.argsort(events, kind="stable")  # event order; a key's rows stay in table order
            events, pos = events[perm], pos[perm]
        return events, self._take(pos, list(range(1, len(self.chunk_schema))))

    def _load(self, need: np.ndarray) -> None:
        import pyarrow as pa

        if self.table is not None:
            return
        missing = [c for c in need.tolist() if c not in self._chunks]
        if missing:
            blobs = self.db.get([_chunk_key(c) for c in missing])  # (rocksdict's stubs: Optional; a list here)
            for c, blob in zip(missing, blobs, strict=True):  # type: ignore[arg-type]
                if blob is None:
                    raise RuntimeError(f"lookup store {self.path}: chunk {c} is missing")
                batch = pa.ipc.read_record_batch(pa.py_buffer(blob), self.chunk_schema)
                self.hashes[self.starts[c]:self.starts[c + 1]] = key_hashes(batch.column(0))
                self._chunks[c] = batch
                self._sizes[c] = len(blob)
                self._bytes += len(blob)
                self.reads += 1
        for c in need.tolist():
            self._chunks.move_to_end(c)
        while self._bytes > self.cache_bytes and len(self._chunks) > len(need):
            c, _ = self._chunks.popitem(last=False)
            self._bytes -= self._sizes.pop(c)
            self.hashes[self.starts[c]:self.starts[c + 1]] = self.bounds[c]
        if len(self._chunks) == len(self.bounds) and self._bytes <= self.cache_bytes:
            self._join_chunks()

    def _join_chunks(self) -> None:
        import pyarrow as pa

        try:
            self.table = pa.Table.from_batches([self._chunks[c] for c in range(len(self.bounds))],
                                               schema=self.chunk_schema).combine_chunks()
        except (pa.ArrowInvalid, pa.ArrowCapacityError):  # a text column over 2 GB: stay in chunks
            return
        self._chunks.clear()
        self._sizes.clear()

    def _take(self, pos: np.ndarray, cols: list[int]) -> Any:
        """Columns `cols` of the rows at store positions `pos` (-1: a row of NULLs)."""
        import pyarrow as pa

        missing = pos < 0
        if self.table is not None:
            return self.table.select(cols).take(pa.array(pos, mask=missing) if missing.any() else pa.array(pos))
        schema = pa.schema([self.chunk_schema.field(i) for i in cols])
        present = np.flatnonzero(~missing)
        order = present[np.argsort(pos[present], kind="stable")]  # grouped by chunk
        ps = pos[order]
        chunk = np.searchsorted(self.starts, ps, "right") - 1
        edges: Any = np.concatenate([[0], np.flatnonzero(np.diff(chunk)) + 1, [len(ps)]]) if len(ps) else []
        parts = [self._chunks[int(chunk[a])].select(cols).take(pa.array(ps[a:b] - self.starts[chunk[a]]))
                 for a, b in zip(edges[:-1], edges[1:], strict=False)]
        got = pa.Table.from_batches(parts, schema=schema).combine_chunks() if parts else schema.empty_table()
        back = np.full(len(pos), -1, dtype=np.int64)  # row of `got` for each position, in `pos` order
        back[order] = np.arange(len(ps), dtype=np.int64)
        return got.take(pa.array(back, mask=back < 0))

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing twice or after the files went is harmless
            self.db.close()


@dataclass
class _Cached:
    version: str
    store: LookupStore
    checked: float
    pending: threading.Thread | None = None


# per process: a table key -> its open store (one per table of the pipeline; closed when dropped)
_CACHE: WorkerCache[str, _Cached] = WorkerCache("open lookup stores", None, close=lambda c: c.store.close())
_LOCK = threading.Lock()


def table_dir(src: TableSource) -> Path:
    """One folder per table and column selection (its versions are pruned together)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in src.name)
    shape = hashlib.sha1(f"{FORMAT}|{src.path}|{src.keys}|{src.values}|{src.schema}".encode()).hexdigest()[:8]
    return Path(src.base_dir) / f"{safe}-{shape}"


def ensure_version(src: TableSource, version: str) -> Path:
    """The folder of `version`, building it under the host lock if no process did yet."""
    root = table_dir(src)
    dest = root / version
    if (dest / "meta.json").exists():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (dest / "meta.json").exists():
                build_store(read_table(src), src.keys, dest, src.chunk_rows)
                _prune(root, keep=dest.name)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return dest


def _prune(root: Path, keep: str, keep_count: int = 2) -> None:
    """Remove versions older than the newest `keep_count` (readers of the previous one keep working)."""
    versions = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                      key=lambda p: p.stat().st_mtime, reverse=True)
    for p in versions[keep_count:]:
        if p.name != keep:
            shutil.rmtree(p, ignore_errors=True)


def store_for(src: TableSource) -> LookupStore:
    """The current store of `src` in this process; refreshed every `src.refresh_s` without blocking. A version
    that does not read as a table is never swapped in (`keep_last_good`); a process opening the table while its
    file is bad opens the last version built on this host."""
    now = time.monotonic()
    with _LOCK:
        cur = _CACHE.get(src.cache_key())
        if cur is None:
            version = source_version(src)
            try:
                path = ensure_version(src, version)
            except TableUnreadable as e:
                last = last_built(src)
                if last is None:
                    raise
                path = last
                keep_last_good(src, version, e)
            store = LookupStore(path, src.cache_mb, src.max_cache_mb)
            _CACHE[src.cache_key()] = _Cached(version, store, now)
            return store
        if src.refresh_s is None or now - cur.checked < src.refresh_s or (cur.pending and cur.pending.is_alive()):
            return cur.store
        cur.checked = now
        try:
            version = source_version(src)
        except OSError:  # a snapshot's LATEST being replaced: keep the current version
            return cur.store
        if version == cur.version or known_bad(src, version):
            return cur.store
        cur.pending = threading.Thread(target=_swap, args=(src, version), daemon=True, name=f"lookup-{src.name}")
        cur.pending.start()
        return cur.store


def last_built(src: TableSource) -> Path | None:
    """The newest complete store version of `src` on this host, or None."""
    root = table_dir(src)
    built = [p for p in root.iterdir() if (p / "meta.json").exists()] if root.is_dir() else []
    return max(built, key=lambda p: p.stat().st_mtime) if built else None


def _swap(src: TableSource, version: str) -> None:
    try:
        store = LookupStore(ensure_version(src, version), src.cache_mb, src.max_cache_mb)
    except TableUnreadable as e:  # the previous version keeps answering
        keep_last_good(src, version, e)
        return
    except Exception:  # noqa: BLE001 - a failed refresh keeps the previous version; retried next interval
        logging.getLogger(__name__).exception("lookup table %s: refresh to version %s failed", src.name, version)
        return
    with _LOCK:
        old = _CACHE.get(src.cache_key())
        _CACHE[src.cache_key()] = _Cached(version, store, time.monotonic())
    if old is not None:
        # in-flight lookups hold their own reference; the old handle closes when they finish
        threading.Timer(30.0, old.store.close).start()


def drop_cached(key: str | None = None) -> None:
    """Forget open stores (tests)."""
    with _LOCK:
        for k in [key] if key else list(_CACHE):
            c = _CACHE.pop(k, None)
            if c is not None:
                c.store.close()
