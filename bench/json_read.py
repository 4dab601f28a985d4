#!/usr/bin/env python3
"""The jsonl file source's reader (etl/jvm/JsonLinesFormat.java) against Spark's own json reader, both with the
corrupt-record column etl's source asks for, on lines whose timestamps name their zone (ISO-8601: converted by
etl/jvm/IsoInstants.java) and on lines whose timestamps have none (read by Spark's parser in both).

    .venv/bin/python bench/json_read.py [--events 1000000] [--repeat 5]
    .venv/bin/python bench/json_read.py --checks [--events 1000000] [--repeat 5]

--events log lines (6 fields, one timestamp) are written once per form; each round reads them into Spark's
`noop` sink, etl's reader then Spark's (alternating which goes first), after one unmeasured round of each.
Measured: wall seconds and CPU seconds of the JVM and this process (one local[2] session).
Last line per form: `json_read form=F events=N etl_s=A spark_s=B ratio=B/A etl_cpu_s=C spark_cpu_s=D cpu_ratio=D/C`
(medians; ratio >= 1: etl's reader is faster).

--checks: etl's reader with the line checks the file source asks for (etl/jvm/BoundedLines.java: the maximum record
size, valid UTF-8, no lone surrogate) against etl's reader without them, on the timestamps that name their zone:
`json_read form=iso checks=on ... checked_s=A unchecked_s=B ratio=B/A ...` (ratio 0.98: the checks cost 2%).

--size-guard: the record-size guard of the sources whose reader does not bound lines itself (etl.compile.deadletter.
within_record_size: csv, parquet, Spark's json and text readers, kafka/rocketmq values) on Spark's json reader's
rows as the file source shares them (columns, ERR, PAYLOAD), against the same rows without it:
`json_read form=iso size_guard=on ... guarded_s=A unguarded_s=B ratio=B/A ...` (ratio 0.98: the guard costs 2%).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from sinks import DDL, alternating, ratio_line  # noqa: E402

FORMS = {"iso": "2026-01-10T12:{m:02d}:{s:02d}Z", "no-zone": "2026-01-10 12:{m:02d}:{s:02d}"}


def lines(path: Path, events: int, form: str) -> None:
    rng = random.Random(7)
    with open(path, "w") as fh:
        for i in range(events):
            ts = FORMS[form].format(m=(i // 60000) % 60, s=(i // 1000) % 60)
            fh.write(json.dumps({"id": i, "host": f"web-{i % 20}", "user": f"u{rng.randrange(5000)}", "status": 200,
                                 "bytes": i * 7, "ts": ts}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--checks", action="store_true", help="etl's reader with and without the line checks")
    ap.add_argument("--size-guard", action="store_true", help="Spark's json reader's rows with and without etl's "
                    "record-size guard (within_record_size)")
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from etl.components.sources.file.build import CORRUPT, JSON_LINES, REJECT, checked
    from etl.runtime.session import build_session

    spark = build_session("bench-json-read", "local[2]", {"spark.ui.enabled": "false"}, ui=False)
    with tempfile.TemporaryDirectory(prefix="etl-bench-json-read-") as tmp:
        for form in (["iso"] if args.checks or args.size_guard else FORMS):
            folder = Path(tmp) / form
            folder.mkdir()
            lines(folder / "in.jsonl", args.events, form)

            def read(fmt: str, folder: Path = folder) -> None:
                (spark.read.format(fmt).schema(f"{DDL}, {CORRUPT} string").option("mode", "PERMISSIVE")
                 .option("columnNameOfCorruptRecord", CORRUPT).load(str(folder))
                 .write.format("noop").mode("overwrite").save())

            def read_checked(folder: Path = folder) -> None:
                (checked(spark.read.format(JSON_LINES).schema(f"{DDL}, {CORRUPT} string, {REJECT} string"))
                 .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT).load(str(folder))
                 .write.format("noop").mode("overwrite").save())

            def read_shared(guard: bool, folder: Path = folder) -> None:
                from pyspark.sql import functions as F

                from etl.compile.deadletter import ok_frame
                from etl.components.sources.file.build import guarded_rows
                from etl.dead_letters import ERR, PAYLOAD

                df = (spark.read.format("json").schema(f"{DDL}, {CORRUPT} string").option("mode", "PERMISSIVE")
                      .option("columnNameOfCorruptRecord", CORRUPT).load(str(folder)))
                fields = [f for f in df.schema.fields if f.name != CORRUPT]
                if guard:  # the file source's rows (ETL_MAX_RECORD_MB: 16 by default)
                    shared = guarded_rows(df, fields, "malformed json line")
                else:
                    shared = df.select(*[f.name for f in fields],
                                       F.when(F.col(CORRUPT).isNotNull(), F.lit("malformed json line")).alias(ERR),
                                       F.col(CORRUPT).alias(PAYLOAD))
                ok_frame(shared).write.format("noop").mode("overwrite").save()  # the good rows, as a stage's `out`

            if args.size_guard:
                med, loads = alternating(spark, {"guarded": lambda: read_shared(True),
                                                 "unguarded": lambda: read_shared(False)}, args.repeat)
                print(ratio_line("json_read", med, loads, "guarded", "unguarded", form=form, size_guard="on",
                                 events=args.events))
                continue
            if args.checks:
                med, loads = alternating(spark, {"checked": read_checked, "unchecked": lambda: read(JSON_LINES)},
                                         args.repeat)
                print(ratio_line("json_read", med, loads, "checked", "unchecked", form=form, checks="on",
                                 events=args.events))
                continue
            med, loads = alternating(spark, {"etl": lambda: read(JSON_LINES), "spark": lambda: read("json")},
                                     args.repeat)
            print(ratio_line("json_read", med, loads, "etl", "spark", form=form, events=args.events))
    spark.stop()


if __name__ == "__main__":
    main()
