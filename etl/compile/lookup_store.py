"""Dimension tables in rocksdict stores on local disk, for lookup joins of large tables.

Layout under `<base>/<table>-<hash of path and columns>/`:
    <version>/db/        the rocksdict store (raw mode: bytes -> bytes, zstd, bloom filters)
    <version>/meta.json  value columns, Arrow schema, encoding, row count, sizes
    .lock                build lock shared by every process of the host
Keys are the join key as text (several key columns joined by \\x1f); values are
the dimension row's value columns encoded as one CSV line (Arrow's writer and
reader, both C++; quoted strings keep "" apart from NULL) -- or JSON when a text
value holds a line break. A key present several times in the table stores its
rows joined by a newline: an inner join emits one row per match.

A store is built once per (table, version) per host: from an SST file sorted
by key (SstFileWriter + ingest, no compaction), in a temporary folder renamed
into place, so readers only ever see complete versions. Each Python worker
keeps the stores it opened in a per-process cache keyed by table + version;
`store_for` re-checks the source every `refresh_s` and swaps to a newer version
once it is built (in a background thread, under the host lock) -- the previous
version keeps answering meanwhile, so the query never stops.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEY_SEP = "\x1f"
BLOCK_SIZE = 16 * 1024
# Block cache per process and store: 0 sizes it to hold the whole store uncompressed (the raw size recorded at
# build time, up to MAX_AUTO_CACHE_MB), so that after warm-up a lookup decompresses nothing; a number fixes it.
DEFAULT_CACHE_MB = int(os.environ.get("ETL_LOOKUP_CACHE_MB", "0"))
MAX_AUTO_CACHE_MB = int(os.environ.get("ETL_LOOKUP_MAX_CACHE_MB", "2048"))
MIN_CACHE_MB = 32


def cache_size_mb(requested: int, meta: dict) -> int:
    """The block cache for a store: `requested` MB, or (0) its raw key + value bytes with room for block overhead."""
    if requested > 0:
        return requested
    raw_mb = meta.get("raw_mb")
    if raw_mb is None:  # built before raw sizes were recorded
        return 256
    return int(min(MAX_AUTO_CACHE_MB, max(MIN_CACHE_MB, raw_mb * 1.25 + 8)))


def default_base_dir() -> str:
    return os.environ.get("ETL_LOOKUP_DIR") or os.path.join(tempfile.gettempdir(), f"etl-lookup-{os.getuid()}")


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
    cache_mb: int = DEFAULT_CACHE_MB

    def cache_key(self) -> str:
        """Identity in per-process caches: two lookups of one table with other columns differ."""
        return "\0".join([self.name, self.path, self.format, ",".join(self.keys), ",".join(self.values),
                           str(self.schema), self.base_dir])


# ------------------------------------------------------------------ reading
def _files(path: str, suffixes: tuple[str, ...]) -> list[str]:
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
    for f in _files(src.path, (".csv", ".json", ".jsonl", ".parquet", ".txt", "")):
        st = os.stat(f)
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns};".encode())
    h.update(repr((src.keys, src.values, str(src.schema))).encode())
    return h.hexdigest()[:16]


def read_table(src: TableSource) -> Any:
    """The table as Arrow: key columns as strings, value columns in `src.schema` types."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    types = {f.name: f.type for f in src.schema} if src.schema is not None else {}
    for k in src.keys:
        types[k] = pa.string()
    if src.format == "csv":
        parts = []
        for f in _files(src.path, (".csv", ".txt")):
            ro = pcsv.ReadOptions(block_size=64 << 20, autogenerate_column_names=not src.header)
            parts.append(pcsv.read_csv(f, read_options=ro, parse_options=pcsv.ParseOptions(delimiter=src.delimiter),
                                       convert_options=pcsv.ConvertOptions(column_types=types,
                                                                           include_columns=list(src.keys + src.values),
                                                                           strings_can_be_null=True,
                                                                           quoted_strings_can_be_null=False)))
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    elif src.format == "jsonl":
        table = pa.concat_tables([pjson.read_json(f) for f in _files(src.path, (".json", ".jsonl"))])
    elif src.format in ("parquet", "snapshot"):
        table = pq.read_table(snapshot_dir(src) if src.format == "snapshot" else src.path)
    else:
        raise ValueError(f"cannot read a {src.format} table")
    missing = [c for c in src.keys + src.values if c not in table.column_names]
    if missing:
        raise KeyError(f"table '{src.name}' has no column(s) {', '.join(missing)}")
    table = table.select(list(src.keys + src.values))
    target = pa.schema([pa.field(c, types.get(c, table.schema.field(c).type)) for c in table.column_names])
    return table.cast(target)


def key_array(table: Any, keys: tuple[str, ...] | list[str]) -> Any:
    """Join keys as text: one column cast to string, several joined by \\x1f (NULL when one is NULL)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = [pc.cast(table.column(k), pa.string()) for k in keys]
    if len(cols) == 1:
        return cols[0]
    return pc.binary_join_element_wise(*cols, KEY_SEP)


# ------------------------------------------------------------------ encoding
def encode_values(table: Any) -> tuple[list[bytes], str]:
    """One bytes value per row: a CSV line (or a JSON object when a text value holds a line break)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if table.num_columns == 0:
        return [b""] * table.num_rows, "none"
    breaks = any(pa.types.is_string(f.type) and pc.any(pc.match_substring_regex(table.column(f.name), "[\r\n]")).as_py()
                 for f in table.schema)
    if breaks:
        return [json.dumps(r, default=str, separators=(",", ":")).encode() for r in table.to_pylist()], "json"
    buf = io.BytesIO()
    pcsv.write_csv(table, buf, write_options=pcsv.WriteOptions(include_header=False, batch_size=1 << 16))
    lines = buf.getvalue().split(b"\n")
    return lines[:-1], "csv"


def decode_values(blobs: list[bytes], schema: Any, encoding: str) -> Any:
    """Arrow table of the rows encoded in `blobs` (one row per line; a blob may hold several lines)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson

    if not blobs:
        return pa.table({f.name: pa.array([], f.type) for f in schema}, schema=schema)
    data = b"\n".join(blobs) + b"\n"
    if encoding == "json":
        return pjson.read_json(io.BytesIO(data), parse_options=pjson.ParseOptions(explicit_schema=schema))
    return pcsv.read_csv(io.BytesIO(data), read_options=pcsv.ReadOptions(column_names=schema.names, block_size=64 << 20),
                         parse_options=pcsv.ParseOptions(ignore_empty_lines=False),
                         convert_options=pcsv.ConvertOptions(column_types=schema, strings_can_be_null=True,
                                                             quoted_strings_can_be_null=False))


# ------------------------------------------------------------------- building
def _options(raw_cache_mb: int | None = None) -> Any:
    from rocksdict import BlockBasedOptions, Cache, DBCompressionType, Options

    opt = Options(raw_mode=True)
    opt.create_if_missing(True)
    opt.set_compression_type(DBCompressionType.zstd())
    bbo = BlockBasedOptions()
    bbo.set_bloom_filter(10, False)
    bbo.set_block_size(BLOCK_SIZE)
    if raw_cache_mb:
        bbo.set_block_cache(Cache(raw_cache_mb << 20))
    opt.set_block_based_table_factory(bbo)
    return opt


def dir_mb(path: str | Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 1e6


def build_store(table: Any, keys: tuple[str, ...], dest: str | Path) -> dict:
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
    order = pc.sort_indices(k)
    k = k.take(order)
    values = table.drop_columns(list(keys)).take(order)
    blobs, encoding = encode_values(values)
    kb = k.cast(pa.binary()).to_pylist()
    dup = len(pc.unique(k)) != len(k)
    opt = _options()
    sst = tmp / "data.sst"
    w = SstFileWriter(opt)
    w.open(str(sst))
    rows = len(kb)
    raw = sum(map(len, kb)) + sum(map(len, blobs)) + 8 * rows  # what the blocks hold uncompressed, roughly
    if not dup:
        for key, val in zip(kb, blobs):
            w[key] = val
    else:
        i = 0
        while i < rows:
            j = i + 1
            while j < rows and kb[j] == kb[i]:
                j += 1
            w[kb[i]] = b"\n".join(blobs[i:j])
            i = j
    w.finish()
    db = Rdict(str(tmp / "db"), opt)
    if rows:
        db.ingest_external_file([str(sst)])
    db.close()
    sst.unlink(missing_ok=True)
    meta = {"rows": rows, "keys": list(keys), "columns": values.column_names, "encoding": encoding,
            "duplicates": dup, "build_s": round(time.time() - t0, 3), "store_mb": round(dir_mb(tmp / "db"), 3),
            "raw_mb": round(raw / 1e6, 3)}
    schema_buf = values.schema.serialize().to_pybytes()
    (tmp / "schema.arrow").write_bytes(schema_buf)
    (tmp / "meta.json").write_text(json.dumps(meta))
    os.replace(tmp, dest)
    return meta


# -------------------------------------------------------------------- reading
class LookupStore:
    """A built store opened read-only (several processes may open one)."""

    def __init__(self, path: str | Path, cache_mb: int = DEFAULT_CACHE_MB):
        import pyarrow as pa
        from rocksdict import AccessType, Rdict

        self.path = Path(path)
        self.meta = json.loads((self.path / "meta.json").read_text())
        self.schema = pa.ipc.read_schema(pa.py_buffer((self.path / "schema.arrow").read_bytes()))
        opt = _options(cache_size_mb(cache_mb, self.meta))
        # the default column family named with the same options: else rocksdict opens it with the options
        # recorded on disk, and the block cache above is never used (every lookup decompresses a block)
        self.db = Rdict(str(self.path / "db"), opt, column_families={"default": opt},
                        access_type=AccessType.read_only())

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return self.db.get(keys) if keys else []

    def close(self) -> None:
        try:
            self.db.close()
        except Exception:  # noqa: BLE001 - closing twice or after the files went is harmless
            pass


@dataclass
class _Cached:
    version: str
    store: LookupStore
    checked: float
    pending: threading.Thread | None = None


_CACHE: dict[str, _Cached] = {}
_LOCK = threading.Lock()


def table_dir(src: TableSource) -> Path:
    """One folder per table and column selection (its versions are pruned together)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in src.name)
    shape = hashlib.sha1(f"{src.path}|{src.keys}|{src.values}|{src.schema}".encode()).hexdigest()[:8]
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
                build_store(read_table(src), src.keys, dest)
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
    """The current store of `src` in this process; refreshed every `src.refresh_s` without blocking."""
    now = time.monotonic()
    with _LOCK:
        cur = _CACHE.get(src.cache_key())
        if cur is None:
            version = source_version(src)
            store = LookupStore(ensure_version(src, version), src.cache_mb)
            _CACHE[src.cache_key()] = _Cached(version, store, now)
            return store
        if src.refresh_s is None or now - cur.checked < src.refresh_s or (cur.pending and cur.pending.is_alive()):
            return cur.store
        cur.checked = now
        try:
            version = source_version(src)
        except OSError:  # the source is being replaced: keep the current version
            return cur.store
        if version == cur.version:
            return cur.store
        cur.pending = threading.Thread(target=_swap, args=(src, version), daemon=True, name=f"lookup-{src.name}")
        cur.pending.start()
        return cur.store


def _swap(src: TableSource, version: str) -> None:
    try:
        store = LookupStore(ensure_version(src, version), src.cache_mb)
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
        for key in [key] if key else list(_CACHE):
            c = _CACHE.pop(key, None)
            if c is not None:
                c.store.close()
