-- window_join: Flink's window join as its documentation shows it ("Window JOIN": LeftTable and RightTable,
-- TUMBLE windows of 5 minutes joined on num, window_start and window_end), INNER and FULL OUTER, and its SEMI
-- (IN) and ANTI (NOT IN) joins; each query's rows are the documented ones (pipelines/sql/window_join.tests.yaml;
-- EXISTS and NOT EXISTS: tests/sql/test_sql_window_semi_anti.py). A padded or ANTI row goes out once the watermark has passed its window.
CREATE TABLE LeftTable (
  row_time TIMESTAMP(3), num INT, id STRING,
  WATERMARK FOR row_time AS row_time - INTERVAL '1' SECOND
) WITH (type = 'file', filePath = '../data/window_join_left.jsonl');

CREATE TABLE RightTable (
  row_time TIMESTAMP(3), num INT, id STRING,
  WATERMARK FOR row_time AS row_time - INTERVAL '1' SECOND
) WITH (type = 'file', filePath = '../data/window_join_right.jsonl');

CREATE TABLE inner_out (L_Num INT, L_Id STRING, R_Num INT, R_Id STRING, window_start TIMESTAMP,
                        window_end TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/window_join_inner');

CREATE TABLE full_out (L_Num INT, L_Id STRING, R_Num INT, R_Id STRING, window_start TIMESTAMP,
                       window_end TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/window_join_full');

CREATE TABLE semi_in (row_time TIMESTAMP, num INT, id STRING, window_start TIMESTAMP, window_end TIMESTAMP,
  window_time TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/window_join_semi_in');

CREATE TABLE anti_not_in (row_time TIMESTAMP, num INT, id STRING, window_start TIMESTAMP, window_end TIMESTAMP,
  window_time TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/window_join_anti_not_in');

CREATE TABLE hop_out (L_Num INT, L_Id STRING, R_Num INT, R_Id STRING, window_start TIMESTAMP,
  window_end TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/window_join_hop_out');

INSERT INTO inner_out
SELECT L.num AS L_Num, L.id AS L_Id, R.num AS R_Num, R.id AS R_Id, L.window_start, L.window_end
FROM (
  SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
) L
JOIN (
  SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
) R
ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end;

INSERT INTO full_out
SELECT L.num AS L_Num, L.id AS L_Id, R.num AS R_Num, R.id AS R_Id,
       COALESCE(L.window_start, R.window_start) AS window_start,
       COALESCE(L.window_end, R.window_end) AS window_end
FROM (
  SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
) L
FULL JOIN (
  SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
) R
ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end;

INSERT INTO semi_in
SELECT *
FROM (
  SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
) L WHERE L.num IN (
  SELECT num FROM (
    SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
  ) R WHERE L.window_start = R.window_start AND L.window_end = R.window_end);

INSERT INTO anti_not_in
SELECT *
FROM (
  SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
) L WHERE L.num NOT IN (
  SELECT num FROM (
    SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
  ) R WHERE L.window_start = R.window_start AND L.window_end = R.window_end);

INSERT INTO hop_out
SELECT L.num AS L_Num, L.id AS L_Id, R.num AS R_Num, R.id AS R_Id, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(HOP(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))) L
JOIN (SELECT * FROM TABLE(HOP(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))) R
ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end;
