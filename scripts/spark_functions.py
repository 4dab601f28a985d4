"""Write etl/sql/spark_functions.tsv: Spark's built-in SQL functions with their signatures, as Spark analyses them.

    .venv/bin/python scripts/spark_functions.py [--raw probes.json]

Starts a local session with etl's settings (etl.runtime.session.build_session: ANSI on, UTC) and, for every
function of SHOW FUNCTIONS (names of letters, digits and _):

* its group (Spark's ExpressionInfo: agg, window, generator, ...; `table` for a table function),
* the numbers of arguments it takes: a call with 0..6 NULLs each, refused by WRONG_NUM_ARGS or
  REQUIRED_PARAMETER_NOT_FOUND or not (`1+`: one or more; `2n`: an even number; `?`: not told),
* per argument position (up to 6), the classes of types it takes: a call with one typed NULL (CAST(NULL AS INT)
  ...) among NULLs, refused by DATATYPE_MISMATCH or not; where text is taken only to be cast (abs('a') is
  abs(CAST('a' AS DOUBLE))), the type it is cast to,
* its result type when the probes tell it: one type, `$p` (the type of argument p), or per position whose class
  changes it, the result per class (abs: string gives double, int its own type).

`etl validate` reads the file (etl.sql.catalog) to check calls without a JVM. Run it again after a pyspark upgrade
(a fast test fails when the file's pyspark version is not the installed one); `--raw` keeps the probes' answers
in a JSON file (reused when it exists: the probes take minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "etl" / "sql" / "spark_functions.tsv"
MAX_PROBED = 6  # calls with 0..6 arguments
TYPED_POSITIONS = 6  # concat_ws, make_timestamp, format_string ... take more than 3
# the class letters of etl.sql.catalog and the type each is probed with
TYPES = {"s": "STRING", "i": "INT", "l": "BIGINT", "f": "DOUBLE", "n": "DECIMAL(10,2)", "b": "BOOLEAN", "d": "DATE",
         "t": "TIMESTAMP", "x": "BINARY", "a": "ARRAY<STRING>", "m": "MAP<STRING,STRING>", "r": "STRUCT<a:STRING>"}
ARITY_ERRORS = ("WRONG_NUM_ARGS", "REQUIRED_PARAMETER_NOT_FOUND")
# answers that tell nothing of the number of arguments: a table function, syntax (CASE, IN), a keyword function
# whose parentheses Spark reads as an alias (current_date(x) is current_date AS (x))
UNTOLD = ("UNRESOLVED_ROUTINE", "NOT_A_SCALAR_FUNCTION", "FAILED_FUNCTION_CALL", "MULTI_ALIAS_WITHOUT_GENERATOR")
GROUPS = {"agg_funcs": "agg", "window_funcs": "window", "generator_funcs": "generator"}
# the type text is cast to where Spark asks for one of these (DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE's list)
_CAST_TARGETS = {"INT": "int", "SMALLINT": "int", "TINYINT": "int", "BIGINT": "bigint", "NUMERIC": "double",
                 "DOUBLE": "double", "FLOAT": "double", "DECIMAL": "double", "DATE": "date", "TIMESTAMP": "timestamp",
                 "BOOLEAN": "boolean"}
_REQUIRES = re.compile(r"requires the (\(?\"[^)]*?\"\)?) type")

Answer = tuple[str, str]  # ("ok", result type) or (error condition, message)


def analyser(spark: Any) -> Callable[[str], Answer]:
    """A function that analyses one SELECT (nothing runs) and tells its result type or its error."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    js = spark._jsparkSession

    def analyse(sql: str) -> Answer:
        try:
            return "ok", js.sql(sql).schema().apply(0).dataType().simpleString()
        except CapturedException as e:
            return e.getCondition() or type(e).__name__, str(e).splitlines()[0][:400]
        except Py4JJavaError as e:  # not a Spark error (an assertion, ...): the call is refused for no told reason
            return e.java_exception.getClass().getName(), str(e.java_exception.getMessage())[:400]

    return analyse


def probe_args(out: Path) -> argparse.Namespace:
    """The probe scripts' command line (--raw: the answers' cache, --out: the table), Spark on the loopback."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", help="keep (or reuse) the probes' answers in this JSON file")
    ap.add_argument("--out", default=str(out))
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return args


def session(app: str) -> Any:
    """A local Spark session of etl's settings (ANSI on), quiet, for probes."""
    from etl.runtime.session import build_session

    spark = build_session(app, "local[1]", {"spark.ui.enabled": "false"}, ui=False)
    spark.sparkContext.setLogLevel("OFF")
    return spark


def probed(raw_path: str | None, keys: list[str], ask: Callable[[Callable[[str], Answer], str], Any],
           app: str) -> dict[str, Any]:
    """The answer to every key: from the cache at `raw_path` (None: no cache), the missing ones asked of Spark by
    `ask(analyse, key)` in one session (written back to the cache)."""
    cache = Path(raw_path) if raw_path else None
    raw: dict[str, Any] = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    if any(k not in raw for k in keys):
        spark = session(app)
        analyse = analyser(spark)
        for k in keys:
            if k not in raw:
                raw[k] = ask(analyse, k)
        spark.stop()
        if cache is not None:
            cache.write_text(json.dumps(raw, indent=0, sort_keys=True))
    return raw


def groups(spark: Any) -> dict[str, str]:
    registry = spark._jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.expressions()
    out = {}
    it = registry.keys().iterator()
    while it.hasNext():
        name = it.next()
        out[name.lower()] = str(registry.get(name).get()._1().getGroup() or "")
    return out


def call(name: str, args: list[str]) -> str:
    return f"SELECT {name}({', '.join(args)})"


def probe(analyse: Callable[[str], Answer], name: str, counts: list[Answer] | None = None) -> dict[str, Any]:
    """The answers of Spark to the calls of one function: by number of NULL arguments (`counts`: known ones), then
    per position and type."""
    counts = counts or [analyse(call(name, ["NULL"] * k)) for k in range(MAX_PROBED + 1)]
    raw: dict[str, Any] = {"counts": counts, "typed": {}}
    taken = arities(counts)
    if taken is None or not taken[0]:
        return raw
    fixed, open_from, _ = taken
    for p in range(1, TYPED_POSITIONS + 1):
        n = next((k for k in fixed if k >= p), None)
        if n is None and open_from is not None:
            n = max(p, open_from)
        if n is None:
            break
        raw["typed"][str(p)] = {"arity": n, "answers": {
            letter: analyse(call(name, ["NULL"] * (p - 1) + [f"CAST(NULL AS {typ})"] + ["NULL"] * (n - p)))
            for letter, typ in TYPES.items()}}
    return raw


def arities(counts: list[Answer]) -> tuple[list[int], int | None, bool] | None:
    """(the numbers of arguments taken up to MAX_PROBED, the number from which every one is taken or None, even
    numbers only), or None when the probes do not tell (a table function, syntax)."""
    if all(c.startswith(UNTOLD) for c, _ in counts):
        return None
    taken = [k for k, (c, _) in enumerate(counts) if not c.startswith(ARITY_ERRORS + UNTOLD)]
    even = any("2n (n > 0)" in m for c, m in counts if c.startswith("WRONG_NUM_ARGS"))
    open_from = None
    if MAX_PROBED in taken and MAX_PROBED - 1 in taken:
        open_from = MAX_PROBED
        while open_from - 1 in taken:
            open_from -= 1
    return taken, open_from, even


def arity_text(counts: list[Answer]) -> str:
    told = arities(counts)
    if told is None:
        return "?"
    taken, open_from, even = told
    if even:
        return "2n"
    if not taken:  # every call refused (cast: syntax)
        return "?"
    fixed = [str(k) for k in taken if open_from is None or k < open_from]
    return ",".join(fixed + ([f"{open_from}+"] if open_from is not None else []))


def classes(typed: dict[str, Any], open_ended: bool) -> str:
    """Per position, the letters of the types taken (`*` when the probes do not tell), with `=type` when text is
    taken only to be cast to that type; positions joined with ';'."""
    out = []
    for p in sorted(typed, key=int):
        answers = typed[p]["answers"]
        refused = {k: m for k, (c, m) in answers.items() if _refuses(c, m, int(p))}
        taken = [k for k in answers if k not in refused]
        refused = list(refused.values())
        if not taken or not refused:  # all refused: the NULLs beside it are refused, not the type
            out.append("*")
            continue
        cell = "".join(taken)
        if "s" in taken:
            cell += _cast_target(refused)
        out.append(cell)
    while not open_ended and out and out[-1] == "*":  # past the last position listed, any type
        out.pop()
    return ";".join(out) or "*"


def _refuses(condition: str, message: str, p: int) -> bool:
    """Whether Spark refuses the type of parameter `p` itself: an error about another parameter (element_at(array,
    NULL): the NULL index) or about the types together (BINARY_OP_DIFF_TYPES) tells nothing of it."""
    if condition not in ("DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "UNEXPECTED_INPUT_TYPE"):
        return False
    ordinals = {1: ("first",), 2: ("second",), 3: ("third",)}.get(p, (f"{p}th", ("fourth", "fifth", "sixth")[p - 4]))
    return any(f"The {o} parameter" in message or f"Parameter {o} " in message for o in ordinals) \
        and 'has the type "VOID"' not in message


def _cast_target(refused: list[str]) -> str:
    for m in refused:
        found = _REQUIRES.search(m)
        if found is None:
            continue
        wanted = re.findall(r"\"([A-Z][A-Z_ ]*)", found.group(1))
        if "STRING" in wanted or not wanted:
            return ""
        targets = {_CAST_TARGETS.get(w.split("(")[0]) for w in wanted}
        if len(targets) == 1 and None not in targets:
            return "=" + targets.pop()  # type: ignore[operator]
        return ""
    return ""


def returns(raw: dict[str, Any]) -> str:
    """The result type: one type over every typed call Spark took, `$p` when it is argument p's, else ''."""
    results, same = set(), {}
    for p, row in raw["typed"].items():
        ok = [(letter, a[1]) for letter, a in row["answers"].items() if a[0] == "ok"]
        results |= {t for _, t in ok}
        same[p] = len(ok) > 1 and all(t == _spark_name(letter) for letter, t in ok)
    containers = any(letter in "amr" and a[0] == "ok" for row in raw["typed"].values()
                     for letter, a in row["answers"].items())
    if len(results) == 1 and _whole(results) and not (containers and "string" in next(iter(results))):
        return results.pop()  # (a string from an array<string> or a map<string,string> is its element's type)
    if not results:
        ok = {a[1] for a in raw["counts"] if a[0] == "ok"}
        return ok.pop() if len(ok) == 1 and _whole(ok) else ""
    # argument p's type when one of the first three positions gives it (further on, a NULL probe of a variadic
    # function, decode or elt, gives the other NULLs' type); several (coalesce, if's 2 and 3): by_class tells
    own = [p for p in sorted(same, key=int) if same[p] and int(p) <= 3]
    return f"${own[0]}" if len(own) == 1 else ""


def by_class(raw: dict[str, Any]) -> str:
    """Where the result depends on the arguments: per position whose typed calls give different results,
    `p:c=type,...` (positions joined with '|'), `$` for the argument's own type; a decimal's result is `decimal`
    (its precision is the argument's), a container's is told only when it is its own type."""
    parts = []
    for p in sorted(raw["typed"], key=int):
        ok = {letter: a[1] for letter, a in raw["typed"][p]["answers"].items() if a[0] == "ok" and _whole({a[1]})}
        if len(set(ok.values())) < 2 or int(p) > 3:  # (past 3: a variadic function's NULLs, as in returns)
            continue
        cells = []
        for letter, t in ok.items():
            if t == _spark_name(letter):
                cells.append(f"{letter}=$")
            elif letter not in "amr" and "," not in re.sub(r"decimal[(][0-9,]*[)]", "", t) \
                    and not t.startswith("struct<"):  # (a map, a struct: fields named after the NULLs, col1)
                cells.append(f"{letter}={re.sub(r'decimal[(][0-9,]*[)]', 'decimal', t)}")
        if cells:
            parts.append(f"{p}:" + ",".join(cells))
    return "|".join(parts)


def _whole(results: set[str]) -> bool:
    """A result type that does not come from the NULLs of the probe (void, struct<>: named_struct(NULL, NULL))."""
    return not any("void" in t or "<>" in t for t in results)


def _spark_name(letter: str) -> str:
    return {"n": "decimal(10,2)", "a": "array<string>", "m": "map<string,string>",
            "r": "struct<a:string>"}.get(letter, TYPES[letter].lower())


def line(name: str, group: str, raw: dict[str, Any]) -> str:
    arity = arity_text(raw["counts"])
    if arity == "?" and any(c == "NOT_A_SCALAR_FUNCTION" for c, _ in raw["counts"]):
        group = "table"
    args = classes(raw["typed"], arity.endswith("+")) if raw["typed"] else "*"
    told = returns(raw) or (by_class(raw) if group != "lambda" else "")  # (a lambda's position: its NULL's type)
    return "\t".join((name, group or "-", arity, args, told or "-"))


HEADER = """# Spark's built-in SQL functions and their signatures as Spark analyses them (etl's session: ANSI on).
# Written by scripts/spark_functions.py: do not edit. Columns: name, group, arity, argument classes, result type.
# arity: 2,3 | 1+ (one or more) | 2n (an even number) | ? (not told: a table function, syntax)
# argument classes, per position (';'): s string, i int, l bigint, f double, n decimal, b boolean, d date,
# t timestamp, x binary, a array, m map, r struct; * any; =T: text is cast to T. Past the last position: any type,
# or the last one's for a function of N+ arguments
# result: a type, $1 (the type of argument 1), or per position p (of the first 3) whose class changes it,
# p:c=type,...|p:... (c a class letter, $ the argument's own type; a call's result is told when its arguments there
# agree on one, past the last position of a function of N+ arguments the last one's), - (not told)
# Read with care: lag and lead (arity 0) and ntile (0) are Spark's: lag() OVER w is lag(NULL) (a void column),
# ntile() is ntile(1); when's 0 is the probe's (when() is refused, COMPLEX_EXPRESSION_UNSUPPORTED_INPUT.NO_INPUTS, no
# arity error): when(c, v) is CASE WHEN c THEN v END. between(a, b, c) and when(c, v) are calls Spark takes that
# validate's parser (sqlglot) reads as keywords: E311 (write a BETWEEN b AND c, CASE WHEN c THEN v END).
"""


def main() -> None:
    args = probe_args(OUT)
    sys.path.insert(0, str(ROOT))
    import pyspark

    spark = session("etl-spark-functions")
    names = sorted({r[0].lower() for r in spark.sql("SHOW FUNCTIONS").collect() if r[0].replace("_", "").isalnum()})
    kinds = groups(spark)
    cache = Path(args.raw) if args.raw else None
    raw: dict[str, Any] = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    analyse = analyser(spark)
    for i, name in enumerate(names):
        if raw.get(name, {}).get("typed") is None:
            raw[name] = probe(analyse, name, raw.get(name, {}).get("counts"))
            if cache is not None and i % 50 == 0:
                cache.write_text(json.dumps(raw))
    if cache is not None:
        cache.write_text(json.dumps(raw))
    lines = [line(n, GROUPS.get(kinds.get(n, ""), kinds.get(n, "").removesuffix("_funcs")), raw[n]) for n in names]
    Path(args.out).write_text(HEADER + f"pyspark\t{pyspark.__version__}\n" + "".join(x + "\n" for x in lines))
    print(f"{len(lines)} functions -> {args.out}")
    spark.stop()


if __name__ == "__main__":
    main()
