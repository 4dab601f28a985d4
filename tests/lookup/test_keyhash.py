"""The key hash the lookup store is ordered by: stable, layout-independent, well spread."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from etl.compile.keyhash import key_hashes

KEYS = ["", "a", "user-42", "12345678", "123456789", "ünïcode-key-longer-than-sixteen"]


def test_values_are_stable():
    """Stores on disk are ordered by these values: a change needs a new lookups.store.FORMAT."""
    assert [int(x) for x in key_hashes(pa.array(KEYS))] == [
        0, 13656869943007173965, 3318725681492179615, 6807069727391193880, 9176041483464125030,
        13917713237999015503]


def test_layout_does_not_matter():
    want = key_hashes(pa.array(KEYS))
    assert (key_hashes(pa.array(KEYS, pa.large_string())) == want).all()
    assert (key_hashes(pa.array([k.encode() for k in KEYS], pa.binary())) == want).all()
    assert (key_hashes(pa.chunked_array([KEYS[:2], KEYS[2:]])) == want).all()
    padded = pa.array(["x" * 30] + KEYS + ["y"])
    assert (key_hashes(padded.slice(1, len(KEYS))) == want).all()
    assert key_hashes(pa.array([], pa.string())).dtype == np.uint64


def test_every_byte_counts():
    """Keys that differ in one byte anywhere, or only in length (trailing NUL bytes), hash apart."""
    base = "k" * 20
    variants = [base[:i] + "K" + base[i + 1:] for i in range(20)] + [base, base + "\0", base[:-1], base + "\0\0"]
    h = key_hashes(pa.array(variants))
    assert len(set(h.tolist())) == len(variants)


def test_no_collisions_among_many_keys():
    rng = np.random.default_rng(3)
    keys = [f"{i}" for i in range(100_000)] + [f"user-{i}@example.com" for i in rng.integers(0, 10**9, 50_000)]
    keys = list(dict.fromkeys(keys))
    assert len(np.unique(key_hashes(pa.array(keys)))) == len(keys)
