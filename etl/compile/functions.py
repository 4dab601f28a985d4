"""The pipeline's Python functions on the Spark session: vectorized (Arrow) UDFs whose row errors are dead letters.

Each scalar function `f(a T1, ...) -> R` is two functions on the session:

* `_etl_fn_f`: an Arrow-optimized Python UDF (`udf(useArrow=True)`: Arrow batches between the JVM and
  the Python worker) that calls the user's callable per row and returns struct<value: R, error: string>:
  an exception on a row gives its type and message in `error` instead of stopping the task;
* `f`: a SQL function (CREATE TEMPORARY FUNCTION ... RETURN) over it, which yields `value`, or raises
  `python function 'f' failed: <error>` (raise_error) on that row. Every expression of a stage is guarded
  (etl.compile.guard), so that raise is caught in the JVM and the row becomes a dead letter with the
  expression's position and the Python error as its reason; the other rows go on. Spark evaluates the
  Python UDF once per row (the struct's two fields read one result).

A table function `t` is the same with R = array<struct<its columns>> (all the rows it yields for the
input row); a select explodes it: `inline(t(x)) AS (a, b)` (SQL: LATERAL TABLE(t(x)) AS T(a, b)).
An aggregate function runs in windows on the state engine (etl.compile.windows.state), whose
accumulator keeps the window's values in the state store and calls it (through RowCall, bounded as
a scalar function) on a pandas Series when the window closes (Spark's streaming aggregation cannot run pandas aggregate UDFs); in a continuous
aggregate (etl.components.transforms.aggregate.build) the same accumulator keeps each key's values, and the
function runs on them after each micro-batch that changed the key. The session also has it as a pandas aggregate
UDF (the types of those aggregates; a batch group-by), calling it through the same RowCall.

Every call is bounded (etl.compile.bounds): a time budget (ETL_FUNCTION_TIMEOUT_S, the module's import too), the
worker's memory (ETL_FUNCTION_MEMORY_MB), the size of its value (ETL_MAX_RECORD_MB) and a value Arrow can encode (a
str with a lone surrogate cannot); a call that crashes its worker is answered on the batch's retry from the dead
worker's journal. Each is the row's dead letter naming the function, never a stopped stream.

The callable's module travels with the function: a module beside the pipeline is shipped as its source
(executed once per Python worker, under a name of its own, so two pipelines' `udfs.py` never clash);
an installed module is imported by name on the executors.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import Any
from collections.abc import Callable

import etl.compile.bounds as bounds
import etl.compile.returns as returns
from etl import settings
from etl.compile.windows.state import AggregateFailed
from etl.workercache import WorkerCache

# per Python worker: (module:callable, source digest) -> the loaded function (the pipeline's own functions)
_LOADED: WorkerCache[tuple[str, str], Callable[..., Any]] = WorkerCache("loaded pipeline functions", None)
RAISED = "python function '"  # the start of the reason of a row a function failed on (etl.compile.guard)


@dataclass(frozen=True)
class Shipped:
    """A callable as the executors load it: by module name, or from the module's source."""

    ref: str  # module:callable
    source: str | None  # the module's source (a module beside the pipeline), None: import by name
    filename: str

    def load(self) -> Callable[..., Any]:
        key = (self.ref, hashlib.sha1((self.source or "").encode()).hexdigest())
        fn = _LOADED.get(key)
        if fn is None:
            module, _, attr = self.ref.partition(":")
            if self.source is None:
                mod = importlib.import_module(module)
            else:
                name = f"_etl_fn_{module.replace('.', '_')}_{key[1][:12]}"
                mod = sys.modules.get(name) or types.ModuleType(name)
                if name not in sys.modules:
                    mod.__file__ = self.filename
                    sys.modules[name] = mod  # while it runs (dataclasses, pickling look it up there)
                    try:
                        exec(compile(self.source, self.filename, "exec"), mod.__dict__)  # noqa: S102 - the user's
                    except BaseException:
                        del sys.modules[name]  # a module that failed is not left half made
                        raise
            fn = _LOADED[key] = getattr(mod, attr)
        return fn


def shipped(sig: Any, base_dir: str) -> Shipped:
    file = Path(sig.file)
    try:
        local = file.resolve().is_relative_to(Path(base_dir).resolve())
    except OSError:
        local = False
    from etl.load.paths import MODULES, read_text

    return Shipped(sig.ref, read_text(str(file), MODULES) if local else None, file.name)


@dataclass(frozen=True)
class Limits:
    """A call's bounds, from the driver's settings (etl.compile.bounds)."""

    timeout_s: float = 30.0
    memory_mb: int = 2048
    max_bytes: int = 16 * 1024 * 1024

    @staticmethod
    def current() -> Limits:
        s = settings.current()
        return Limits(s.function_timeout_s, s.function_memory_mb, s.max_record_mb * 1024 * 1024)


class RowCall:
    """Calls the user's function on one row: (value, None), or (None, "<Error>: <message>") when it raises, or
    (None, what is wrong) when it returns a value of another type than its declared `dtype` (a pyspark DataType;
    a table function: the struct of its columns), which the Arrow conversion would fail the task on, or a value
    over the maximum size or not valid Unicode, or when it runs past a bound (etl.compile.bounds)."""

    def __init__(self, fn: Shipped, table: bool, dtype: Any, name: str = "", limits: Limits | None = None):
        self.fn, self.table, self.dtype, self.name = fn, table, dtype, name
        self.limits = limits or Limits()
        self._journal: bounds.Journal | None = None
        self._timer: bounds.Timer | None = None
        self._load_error: str | None = None
        self._fn: Callable[..., Any] | None = None  # the loaded callable

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_journal": None, "_timer": None, "_load_error": None, "_fn": None}

    def _start(self) -> bounds.Journal:
        bounds.limit_memory(self.limits.memory_mb)
        self._journal = journal = bounds.journal(self.name or self.fn.ref)
        self._timer = bounds.timer(self.limits.timeout_s)
        return journal

    def __call__(self, *args: Any) -> tuple[Any, str | None]:
        journal = self._journal if self._journal is not None else self._start()
        timer = self._timer
        i = journal.begin()
        cause = journal.crashed(i)
        if cause is not None:  # this call ended a worker before (the batch's retry)
            journal.end(i)
            return None, (self._late(True) if cause else "its Python worker ended during this call (os._exit, a "
                          "crash or a signal such as the OOM killer's); the call was not made again")
        if self._load_error is not None:
            journal.end(i)
            return None, self._load_error
        if timer is not None:
            timer.on_kill = journal.overtime
            timer.start = monotonic()
            timer.active = True
        try:
            try:
                f = self._fn or self._load()
            except bounds.Overtime:
                self._load_error = f"importing {self.fn.ref} {self._late(False)}"
                return None, self._load_error
            except Exception as e:  # noqa: BLE001 - the module's error: every row's dead letter says it
                self._load_error = f"importing {self.fn.ref} failed: {type(e).__name__}: {e}"
                return None, self._load_error
            value = f(*args)
            if self.table:  # a generator runs here: its error belongs to this row too
                value = list(value)
        except bounds.Overtime:
            return None, self._late(False)
        except MemoryError as e:
            return None, (f"MemoryError{f': {e}' if str(e) else ''} (more memory than its worker may have: "
                          f"ETL_FUNCTION_MEMORY_MB={self.limits.memory_mb})")
        except Exception as e:  # noqa: BLE001 - the user's error on this row: the row's dead letter says it
            return None, f"{type(e).__name__}: {e}"
        finally:
            if timer is not None:
                timer.active = False
            journal.end(i)
        if self.table:
            return _table_rows(self.dtype, value, self.limits.max_bytes)
        wrong = returns.mismatch(self.dtype, value) or _unwritable(value, self.limits.max_bytes)
        return (value, None) if wrong is None else (None, wrong)

    def _load(self) -> Callable[..., Any]:
        self._fn = self.fn.load()
        return self._fn

    def _late(self, killed: bool) -> str:
        t = f"{self.limits.timeout_s:g} s (ETL_FUNCTION_TIMEOUT_S)"
        return (f"did not return within {t}, nor {bounds.GRACE_S:g} s after it was interrupted: its worker was ended"
                if killed else f"did not return within {t}")


def _unwritable(value: Any, max_bytes: int) -> str | None:
    """What makes a str or bytes value impossible to pass on: over `max_bytes`, or a str that is not valid Unicode
    (a lone surrogate, which UTF-8 cannot encode); None when nothing does."""
    if isinstance(value, str):
        if value.isascii():
            size = len(value)
        else:
            try:
                size = len(value.encode("utf-8"))
            except UnicodeEncodeError as e:
                return (f"returned a str that is not valid Unicode (a lone surrogate U+{ord(value[e.start]):04X} at "
                        f"index {e.start}): UTF-8 cannot encode it")
        if size > max_bytes:
            return f"returned a str of {size} bytes, over the maximum record size of {max_bytes} bytes (ETL_MAX_RECORD_MB)"
    elif isinstance(value, (bytes, bytearray)) and len(value) > max_bytes:
        return f"returned {len(value)} bytes, over the maximum record size of {max_bytes} bytes (ETL_MAX_RECORD_MB)"
    return None


def _table_rows(dtype: Any, rows: list[Any], max_bytes: int) -> tuple[Any, str | None]:
    """A table function's rows as tuples, or what is wrong with the first row that is not one of its columns."""
    cols = f"({', '.join(f'{c.name} {c.dataType.simpleString()}' for c in dtype.fields)})"
    out = []
    for i, r in enumerate(rows, 1):
        row = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        if len(row) != len(dtype.fields):
            what = (f"has {len(row)} value(s)" if isinstance(r, (tuple, list))
                    else f"is {returns.described(r)}, not a tuple,")
            return None, f"row {i} {returns.short(r)} {what} where its declared columns are {cols}"
        for c, v in zip(dtype.fields, row, strict=True):
            wrong = returns.problem(c.dataType, v)
            if wrong is not None:
                return None, (f"row {i} {returns.short(r)}: column '{c.name}' is {wrong} where its declared type "
                              f"is {c.dataType.simpleString()}")
            wrong = _unwritable(v, max_bytes)
            if wrong is not None:
                return None, f"row {i}: column '{c.name}' {wrong}"
        out.append(row)
    return out, None


def spark_type(sig: Any) -> str:
    if sig.kind == "table":
        return "array<struct<" + ", ".join(f"`{n}`: {t}" for n, t in sig.columns) + ">>"
    return sig.returns


def register(spark: Any, graph: Any) -> None:
    """Put the pipeline's functions on the session (see the module docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DataType

    for sig in graph.functions.values():
        fn = shipped(sig, graph.base_dir)
        if sig.kind == "aggregate":  # batch group-bys (and the types of the state engine's aggregates)
            bounded = RowCall(fn, False, DataType.fromDDL(sig.returns), sig.name, Limits.current())
            spark.udf.register(sig.name, F.pandas_udf(_series(bounded), sig.returns))  # type: ignore[call-overload]  # pyspark's stubs: the UDF's type hints, not an overload, pick its kind
            continue
        out = spark_type(sig)
        inner = f"_etl_fn_{sig.name}"
        dtype = DataType.fromDDL(sig.returns)  # a table function: the struct of its columns
        spark.udf.register(inner, F.udf(RowCall(fn, sig.kind == "table", dtype, sig.name, Limits.current()),
                                        f"struct<value: {out}, error: string>", useArrow=True))
        params = ", ".join(f"a{i} {t}" for i, t in enumerate(sig.args))
        call = f"{inner}({', '.join(f'a{i}' for i in range(len(sig.args)))})"
        spark.sql(f"CREATE OR REPLACE TEMPORARY FUNCTION {sig.name}({params}) RETURNS {out} RETURN "
                  f"(SELECT CASE WHEN r.error IS NULL THEN r.value ELSE "
                  f"raise_error(concat(\"{RAISED}{sig.name}' failed: \", r.error)) END FROM (SELECT {call} AS r))")


def aggregate_functions(graph: Any, aggregates: Any) -> dict[str, RowCall]:
    """The pipeline's aggregate functions that `aggregates` (a window's or a continuous aggregate's) call, as the
    state engine's executors call them: on the group's values as a pandas Series, each call bounded as a scalar
    function's (RowCall: time, memory, crash journal, the value's type and size)."""
    from pyspark.sql.types import DataType

    out: dict[str, RowCall] = {}
    for a in aggregates:
        sig = graph.functions.get(a.fn.lower())
        if sig is not None and sig.kind == "aggregate":
            out[a.fn] = RowCall(shipped(sig, graph.base_dir), False, DataType.fromDDL(sig.returns), sig.name,
                                Limits.current())
    return out


def _series(call: RowCall) -> Callable[[Any], Any]:
    """A pandas aggregate: the group's values as a Series -> one value (Spark reads the kind from the hints), the
    call bounded as the state engine's (RowCall); a call that raises or runs past a bound fails its task with
    `python function 'f' failed: <what>` (a batch group-by has no row to make a dead letter of)."""
    import pandas as pd

    def aggregate(values: Any) -> Any:
        value, error = call(values)
        if error is not None:
            raise AggregateFailed(f"{RAISED}{call.name}' failed: {error}")
        return value

    aggregate.__annotations__ = {"values": pd.Series, "return": float}
    return aggregate
