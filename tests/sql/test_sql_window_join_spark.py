"""A HOP or CUMULATE window join side gives each row a row per window (etl.sql.window_join): Spark evaluates the
derive's window bounds for rows around the windows' edges, offsets too, and they are the windows etl's state engine
assigns (etl.compile.windows.state.windows_of, Flink's assigners), in one batch query on the session's Spark."""
from __future__ import annotations

from datetime import datetime, timedelta, UTC
from pathlib import Path

import pytest

from etl.check import check_file
from etl.compile.windows.state import Config, windows_of

TABLE = ("CREATE TABLE {t} (row_time TIMESTAMP(3), num INT, WATERMARK FOR row_time AS row_time) "
         "WITH (type = 'file', filePath = '{t}.jsonl');\n")
JOIN = ("CREATE TABLE o (n INT) WITH (type = 'print');\nINSERT INTO o SELECT L.num FROM (SELECT * FROM TABLE({tvf})) L "
        "JOIN (SELECT * FROM TABLE({tvf_r})) R ON L.num = R.num AND L.window_start = R.window_start AND "
        "L.window_end = R.window_end;\n")
CASES = [  # (the TVF's arguments after the time column, kind, size, slide or step, offset) in minutes
    ("HOP", "INTERVAL '5' MINUTES, INTERVAL '10' MINUTES", "sliding", 10, 5, 0),
    ("HOP", "INTERVAL '4' MINUTES, INTERVAL '10' MINUTES, INTERVAL '1' MINUTES", "sliding", 10, 4, 1),
    ("CUMULATE", "INTERVAL '5' MINUTES, INTERVAL '15' MINUTES", "cumulating", 15, 5, 0),
    ("CUMULATE", "INTERVAL '5' MINUTES, INTERVAL '15' MINUTES, INTERVAL '-2' MINUTES", "cumulating", 15, 5, 13),
]


@pytest.mark.spark
def test_hop_and_cumulate_sides_give_each_row_the_windows_of_flinks_assigners(spark, tmp_path: Path):
    base = datetime(2020, 4, 15, 12, 0, tzinfo=UTC)
    times = [base + timedelta(seconds=s) for s in range(-1200, 1201, 30)] + [base + timedelta(microseconds=-1)]
    frame = spark.createDataFrame([(t,) for t in times], "row_time timestamp")
    for fn, args, kind, size, every, offset in CASES:
        tvf = f"{fn}(TABLE {{}}, DESCRIPTOR(row_time), {args})"
        f = tmp_path / "job.sql"
        f.write_text(TABLE.format(t="l") + TABLE.format(t="r") + JOIN.format(tvf=tvf.format("l"), tvf_r=tvf.format("r")))
        c = check_file(f, environ={})
        assert c.report.errors == [], [d.render() for d in c.report.sorted()]
        (expr,) = next(t for t in c.pipeline.transforms if t.type == "derive").columns.values()
        got = frame.selectExpr("row_time", f"{expr} AS w").collect()
        cfg = Config(kind, size * 60000, every * 60000, 0, None, False, (), (), (), offset_ms=offset * 60000)
        for row in got:
            us = round(row.row_time.timestamp() * 1e6)  # windows_of takes milliseconds: windows end on whole ones
            want = [(s * 1000, e * 1000, e * 1000 - 1000) for s, e in windows_of(cfg, us // 1000)]
            have = [(round(w.window_start.timestamp() * 1e6), round(w.window_end.timestamp() * 1e6),
                     round(w.window_time.timestamp() * 1e6)) for w in row.w]
            assert have == want, (fn, args, row.row_time)
