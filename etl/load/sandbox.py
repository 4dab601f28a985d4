"""The Jinja sandbox pipeline templates render in, and the limits that bound a render.

Templates see plain data (the vars) and plain functions (`env`, `range`, `lipsum`,
`cycler`, `joiner`, `namespace`, `dict`), in jinja2's ImmutableSandboxedEnvironment:
no attribute leads to Python internals, no method changes a value.

Bounds (`limits()`; defaults no real pipeline reaches, ETL_TEMPLATE_TIMEOUT seconds and
ETL_TEMPLATE_MAX_MB megabytes override them):
- the rendered text and any string or list a template builds with `*`, `+` or
  `lipsum` hold at most `max_bytes`; integers made by `*` and `**` at most MAX_INT_BITS bits;
- a render that is not a plain substitution runs in a forked child process with a
  wall-clock limit (`seconds`) and an address-space limit (`max_bytes` x MEMORY_FACTOR
  above what the process already maps), so a loop, a recursion or one huge operation
  ends with a positioned E002 rather than a hung or killed etl.
"""

from __future__ import annotations

import functools
import os
import pickle
import resource
import select
import signal
import time
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from jinja2 import ChainableUndefined, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.utils import generate_lorem_ipsum

from etl.settings import current

DEFAULT_SECONDS = 2.0
DEFAULT_MAX_MB = 64
MAX_INT_BITS = 1 << 16  # about 20,000 decimal digits
MEMORY_FACTOR = 4


@dataclass(frozen=True)
class Limits:
    seconds: float = DEFAULT_SECONDS
    max_bytes: int = DEFAULT_MAX_MB * 1024 * 1024


def limits() -> Limits:
    """The render limits: defaults, or ETL_TEMPLATE_TIMEOUT / ETL_TEMPLATE_MAX_MB (etl.settings)."""
    s = current()
    return Limits(s.template_timeout_s, int(s.template_max_mb * 1024 * 1024))


class LimitExceeded(SecurityError):
    """A template went past a render limit (size, integer size, time or memory)."""


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _int_bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) and not isinstance(value, bool) else 0


class Sandbox(ImmutableSandboxedEnvironment):
    """ImmutableSandboxedEnvironment with arithmetic and string building bounded by size."""

    intercepted_binops = frozenset({"*", "**", "+"})

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.globals["lipsum"] = _lipsum

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        cap = limits().max_bytes
        if op == "**" and _int_bits(left) > 1 and isinstance(right, int) and right > 0 \
                and right * _int_bits(left) > MAX_INT_BITS:
            raise LimitExceeded(f"{left} ** {right} is too large (over {MAX_INT_BITS} bits)")
        if op == "*":
            if _int_bits(left) + _int_bits(right) > MAX_INT_BITS:
                raise LimitExceeded(f"a product of over {MAX_INT_BITS} bits")
            for seq, n in ((left, right), (right, left)):
                if _size(seq) and isinstance(n, int) and _size(seq) * n > cap:
                    raise LimitExceeded(f"repeating a value {n} times makes over {cap // (1024 * 1024)} MB")
        if op == "+" and _size(left) + _size(right) > cap:
            raise LimitExceeded(f"joining two values makes over {cap // (1024 * 1024)} MB")
        return super().call_binop(context, op, left, right)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002 - jinja's names
    """jinja's lipsum, with the number and size of paragraphs bounded."""
    if not all(isinstance(x, int) for x in (n, min, max)) or n > 1000 or max > 1000 or min > max:
        raise LimitExceeded("lipsum() takes at most 1000 paragraphs of at most 1000 words")
    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


class Lenient(ChainableUndefined):
    """First-pass undefined: every operation on it quietly yields another undefined (renders as '')."""

    def _quiet(self, *args: Any, **kwargs: Any) -> Lenient:
        return self

    # jinja's Undefined types these as raising (Never); here they return the undefined itself
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _quiet  # type: ignore[assignment]
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pos__ = __neg__ = __pow__ = __rpow__ = _quiet  # type: ignore[assignment]
    __call__ = __getitem__ = _quiet  # type: ignore[assignment]
    __lt__ = __le__ = __gt__ = __ge__ = _quiet  # type: ignore[assignment]

    def __int__(self) -> int:  # type: ignore[override]
        return 0

    def __float__(self) -> float:  # type: ignore[override]
        return 0.0

    def __iter__(self):
        return iter(())

    def __bool__(self) -> bool:
        return False

    __hash__ = ChainableUndefined.__hash__


@functools.cache
def sandbox(strict: bool) -> Sandbox:
    return Sandbox(undefined=StrictUndefined if strict else Lenient, keep_trailing_newline=True, autoescape=False)


class Timeout(LimitExceeded):
    pass


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _on_alarm(signum: int, frame: Any) -> None:
    raise Timeout(f"rendering takes longer than {limits().seconds:g} s")


def bounded(work: Callable[[], Any]) -> Any:
    """Run `work()` (a render) in a forked child under the time and memory limits; return its
    (picklable) result. A child that overruns its limits and cannot say so is reported as Timeout
    or MemoryError raised here."""
    lim = limits()
    if not hasattr(os, "fork"):
        return work()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: render, send the result, leave without cleanup of the parent's state
        code = 0
        try:
            os.close(read_fd)
            budget = _mapped_bytes() + lim.max_bytes * MEMORY_FACTOR
            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            if budget and (hard == resource.RLIM_INFINITY or budget < hard):
                resource.setrlimit(resource.RLIMIT_AS, (budget, hard))
            for sig in (signal.SIGINT, signal.SIGTERM):  # the parent's handlers (etl run's Ctrl-C) are not ours
                signal.signal(sig, signal.SIG_IGN)
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, lim.seconds)
            try:
                result: Any = ("ok", work())
            except BaseException as e:  # noqa: BLE001 - sent to the parent, which reports it
                result = ("raised", e)
            signal.setitimer(signal.ITIMER_REAL, 0)
            try:
                data = pickle.dumps(result)
            except Exception:  # noqa: BLE001
                data = pickle.dumps(("raised", RuntimeError(str(result[1]))))
            with os.fdopen(write_fd, "wb") as out:
                out.write(data)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = lim.seconds + 1.0
    start = time.monotonic()
    with os.fdopen(read_fd, "rb") as src:
        while True:
            left = deadline - (time.monotonic() - start)
            ready = select.select([src], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise Timeout(f"rendering takes longer than {lim.seconds:g} s")
            chunk = os.read(src.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        raise MemoryError(f"rendering needs more than {MEMORY_FACTOR * lim.max_bytes // (1024 * 1024)} MB")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "raised":
        raise value
    return value


__all__ = ["Lenient", "LimitExceeded", "Limits", "Sandbox", "Timeout", "bounded", "limits", "sandbox"]
