"""Write etl/sql/spark_casts.tsv: which casts Spark's analysis takes (Cast.canAnsiCast for CAST and `::`,
Cast.canTryCast for TRY_CAST: etl's session runs with ANSI on), as Spark answers them.

    .venv/bin/python scripts/spark_casts.py [--raw probes.json]

Starts a local session with etl's settings and analyses (nothing runs) `SELECT CAST(CAST(NULL AS F) AS T)` and
`SELECT TRY_CAST(CAST(NULL AS F) AS T)` for every pair of the types of TYPES (one of each kind: numbers, text,
dates, intervals, binary, containers), at three levels:

* `top`: F to T,
* `element`: array<F> to array<T> (Spark's rule for an array's elements, a map's values and a struct's fields),
* `key`: map<F,string> to map<T,string> (a map's keys: a cast that may give NULL is refused there).

`etl validate` reads the file (etl.sql.casts) and applies Spark's recursion over containers (array to array, map
to map, struct to struct of as many fields). Run it again after a pyspark upgrade (a fast test fails when the
file's pyspark version is not the installed one); `--raw` keeps the answers in a JSON file (reused when it exists).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.spark_functions import probe_args, probed  # noqa: E402

OUT = ROOT / "etl" / "sql" / "spark_casts.tsv"
# the types probed, as etl.sql.casts names them (its `kind`), with the type text each is probed with
TYPES = {"void": "VOID", "string": "STRING", "boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT",
         "int": "INT", "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "decimal": "DECIMAL(10,2)",
         "date": "DATE", "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ", "binary": "BINARY",
         "interval year to month": "INTERVAL YEAR TO MONTH", "interval month": "INTERVAL MONTH",
         "interval day to second": "INTERVAL DAY TO SECOND", "interval day": "INTERVAL DAY",
         "variant": "VARIANT", "array": "ARRAY<STRING>", "map": "MAP<STRING,STRING>", "struct": "STRUCT<a:STRING>"}
LEVELS = {"top": "{}", "element": "ARRAY<{}>", "key": "MAP<{},STRING>"}
MODES = ("CAST", "TRY_CAST")


def probe(analyse: Any, level: str, mode: str, src: str, dst: str) -> str:
    wrap = LEVELS[level]
    sql = f"SELECT {mode}(CAST(NULL AS {wrap.format(TYPES[src])}) AS {wrap.format(TYPES[dst])})"
    return analyse(sql)[0]


def cell(answers: dict[str, str]) -> str:
    """`+` both take it, `c` CAST only, `t` TRY_CAST only, `-` neither; `?` an answer that is no type check (the
    type cannot be written there: a map key of a map type)."""
    ok = {m: a == "ok" for m, a in answers.items()}
    told = all(a == "ok" or a.startswith("DATATYPE_MISMATCH") for a in answers.values())
    if not told:
        return "?"
    return {(True, True): "+", (True, False): "c", (False, True): "t", (False, False): "-"}[
        (ok["CAST"], ok["TRY_CAST"])]


HEADER = """# The casts Spark's analysis takes (etl's session: ANSI on), from a row's type to a column's.
# Written by scripts/spark_casts.py: do not edit. One table per level: top (F to T), element (array<F> to array<T>:
# also a map's values and a struct's fields), key (map<F,string> to map<T,string>). A cell: + CAST and TRY_CAST
# take it, c CAST only, t TRY_CAST only, - neither (DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION ...), ? not told.
# decimal stands for decimal(10,2), array for array<string>, map for map<string,string>, struct for struct<a:string>:
# etl.sql.casts recurses into containers of one kind as Spark does.
"""


def main() -> None:
    args = probe_args(OUT)
    import pyspark

    keys = {f"{level} {mode} {s} -> {d}": (level, mode, s, d)
            for level in LEVELS for mode in MODES for s in TYPES for d in TYPES}
    raw = probed(args.raw, list(keys), lambda analyse, k: probe(analyse, *keys[k]), "etl-spark-casts")
    names = list(TYPES)
    out = [HEADER, f"pyspark\t{pyspark.__version__}\n"]
    for level in LEVELS:
        out.append("\t".join([level] + names) + "\n")
        for s in names:
            cells = [cell({m: raw[f"{level} {m} {s} -> {d}"] for m in MODES}) for d in names]
            out.append("\t".join([s] + cells) + "\n")
    Path(args.out).write_text("".join(out))
    print(f"{len(keys)} casts -> {args.out}")


if __name__ == "__main__":
    main()
