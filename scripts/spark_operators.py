"""Write etl/sql/spark_operators.tsv: the type Spark gives each arithmetic operator (and its try_ function) over a
pair of argument types, or that it refuses the pair, as Spark answers (etl's session: ANSI on).

    .venv/bin/python scripts/spark_operators.py [--raw probes.json]

Starts a local session with etl's settings and analyses (nothing runs) `SELECT CAST(NULL AS L) op CAST(NULL AS R)`
(`op(CAST(NULL AS L), CAST(NULL AS R))` for a function) for every pair of the types of TYPES and every operator of
OPERATORS. `etl validate` reads the file (etl.sql.operators): the type of `a + b`, `date - date`, `ts - ts`,
`tags || tags`, `try_add(d, 1)`, and E102 at an operator Spark refuses (`date + date`, `try_add(date, date)`).
A decimal result is written as Spark gives it for DECIMAL(10,2) / int; etl.sql.operators computes the precision
of others by Spark's rule (DecimalPrecision), which tests/spark/test_spark_operators.py asks Spark again.
Run it again after a pyspark upgrade; `--raw` keeps the answers in a JSON file (reused when it exists).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.spark_casts import TYPES as CAST_TYPES  # noqa: E402
from scripts.spark_functions import probe_args, probed  # noqa: E402

OUT = ROOT / "etl" / "sql" / "spark_operators.tsv"
# the types probed: the casts' (scripts/spark_casts.py) but the single-field intervals and variant
TYPES = {k: v for k, v in CAST_TYPES.items() if k not in ("interval month", "interval day", "variant")}
OPERATORS = ("+", "-", "*", "/", "%", "div", "||", "try_add", "try_subtract", "try_multiply", "try_divide",
             "try_mod", "coalesce", "greatest", "=", "<")  # coalesce, greatest: the one type Spark brings two
# arguments to; = and <: comparisons (<=>, != as =; <=, >, >= as <)


def expression(op: str, left: str, right: str) -> str:
    a, b = (f"CAST(NULL AS {TYPES[t]})" for t in (left, right))
    return f"{op}({a}, {b})" if op[0].isalpha() and op != "div" else f"{a} {op} {b}"


def cell(answer: tuple[str, str]) -> str:
    """The result type, `-` refused by the analysis's type check (DATATYPE_MISMATCH ...), `?` another answer."""
    condition, told = answer
    if condition == "ok":
        return told
    return "-" if condition.startswith(("DATATYPE_MISMATCH", "BINARY_OP_WRONG_TYPE", "UNEXPECTED_INPUT_TYPE")) \
        else "?"


HEADER = """# The type Spark's analysis gives an arithmetic operator over two arguments (etl's session: ANSI on).
# Written by scripts/spark_operators.py: do not edit. One table per operator (a row: the left argument's type, a
# column: the right's); a cell: the result type, - refused (DATATYPE_MISMATCH ...), ? another answer.
# decimal stands for decimal(10,2) (etl.sql.operators computes other precisions by Spark's rule), array for
# array<string>, map for map<string,string>, struct for struct<a:string>.
"""


def main() -> None:
    args = probe_args(OUT)
    import pyspark

    keys = {f"{op} {a} {b}": (op, a, b) for op in OPERATORS for a in TYPES for b in TYPES}
    raw = probed(args.raw, list(keys), lambda analyse, k: list(analyse(f"SELECT {expression(*keys[k])}")),
                 "etl-spark-operators")
    names = list(TYPES)
    out = [HEADER, f"pyspark\t{pyspark.__version__}\n"]
    for op in OPERATORS:
        out.append("\t".join([op] + names) + "\n")
        for a in names:
            out.append("\t".join([a] + [cell(tuple(raw[f"{op} {a} {b}"])) for b in names]) + "\n")  # type: ignore[arg-type]
    Path(args.out).write_text("".join(out))
    print(f"{len(keys)} operator calls -> {args.out}")


if __name__ == "__main__":
    main()
