"""Compiled programs kept per process and on disk, for the JVM's grok (etl/jvm/Grok.java).

`program_bytes(python_regex)` -> (serialized program, None) or (None, why not). A
program depends only on the regex and on this package's source, so it is compiled
once per machine: the on-disk cache of etl.diskcache (kind "grok") keeps
programs and the reasons a regex has none, under a key of both.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from etl import diskcache
from etl.grokvm import Unsupported, compile_program


@functools.lru_cache(maxsize=64)
def program_bytes(python_regex: str) -> tuple[bytes | None, str | None]:
    """The program of `python_regex` read with DOTALL, for lines without a newline: etl/jvm/Grok.java compiles
    its regex as Logstash reads grok (multi-line: ^ $ are line anchors, \\Z ends before a last \\n), and a line
    with a \\n is the regex's (a program's fallback byte); on other lines the two meanings are the same."""
    key = hashlib.sha256((version() + "\n" + python_regex).encode()).hexdigest()
    cached = diskcache.read("grok", key, ".prog")
    if cached is not None:
        return (cached[1:], None) if cached[:1] == b"P" else (None, cached[1:].decode())
    try:
        prog = compile_program(python_regex, dotall=True)
        prog.fallback |= 1 << ord("\n")
        body: bytes | None = prog.to_bytes()
        why = None
    except Unsupported as e:
        body, why = None, str(e) or type(e).__name__
    diskcache.write("grok", key, ".prog", b"P" + body if body is not None else b"U" + str(why).encode())
    return body, why


@functools.lru_cache(maxsize=1)
def version() -> str:
    """Digest of this package's source: a changed compiler never reuses an old program."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()
