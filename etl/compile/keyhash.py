"""64-bit hashes of text keys, vectorized over Arrow string arrays (numpy; no Python object per key).

The lookup store orders its rows by this hash and workers find keys by
binary search over it, so the build and the lookups must hash alike: both
call `key_hashes`. Each key is read 8 bytes at a time (the last word
zero-padded), mixed into a state seeded with its length, and finished with
MurmurHash3's fmix64. Not cryptographic; equal hashes are checked against the
keys themselves, so a collision costs a comparison, never a wrong match.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

_K = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S29, _S33, _ONE, _EIGHT = np.uint64(29), np.uint64(33), np.uint64(1), np.uint64(8)


def _fmix(h: np.ndarray) -> np.ndarray:
    h ^= h >> _S33
    h *= _M1
    h ^= h >> _S33
    h *= _M2
    h ^= h >> _S33
    return h


def key_hashes(keys: Any) -> np.ndarray:
    """uint64 hash of every value of a string/binary array (NULLs hash like the empty string)."""
    import pyarrow as pa

    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    n = len(keys)
    if n == 0:
        return np.empty(0, np.uint64)
    large = pa.types.is_large_string(keys.type) or pa.types.is_large_binary(keys.type)
    bufs = keys.buffers()
    offs = np.frombuffer(bufs[1], np.int64 if large else np.int32)[keys.offset:keys.offset + n + 1].astype(np.int64)
    base, end = int(offs[0]), int(offs[-1])
    padded = np.zeros(end - base + 8, np.uint8)  # 8 readable bytes after every key's start
    if end > base:
        padded[:end - base] = np.frombuffer(bufs[2], np.uint8)[base:end]
    windows = as_strided(padded, shape=(end - base + 1, 8), strides=(1, 1))  # row i: bytes i .. i + 7
    start = offs[:-1] - base
    lens = np.diff(offs)
    with np.errstate(over="ignore"):
        h = lens.astype(np.uint64) * _K
        for w in range(0, int(lens.max()), 8):
            rows = np.flatnonzero(lens > w)
            word = np.ascontiguousarray(windows[start[rows] + w]).view("<u8").ravel()
            rest = lens[rows] - w
            short = rest < 8
            if short.any():
                word[short] &= (_ONE << (_EIGHT * rest[short].astype(np.uint64))) - _ONE
            x = (h[rows] ^ word) * _K
            h[rows] = x ^ (x >> _S29)
        return _fmix(h)
