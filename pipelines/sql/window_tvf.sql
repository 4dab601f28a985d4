-- window_tvf: Flink's window table functions as its documentation shows them, on its Bid tables
-- (pipelines/data/bids.jsonl: the "Window Aggregation" page's, bids_topn.jsonl: the "Window Top-N"
-- and "Window Deduplication" pages'). CUMULATE with aggregation, TUMBLE with an offset, GROUPING
-- SETS of a window aggregation (with GROUPING), and window Top-N and deduplication straight over a TVF's rows.
-- Each query's rows are the documented ones (pipelines/sql/window_tvf.tests.yaml).
CREATE TABLE Bid (
  bidtime TIMESTAMP(3), price DOUBLE, item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH (type = 'file', filePath = '../data/bids.jsonl');

CREATE TABLE BidTopN (
  bidtime TIMESTAMP(3), price DOUBLE, item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH (type = 'file', filePath = '../data/bids_topn.jsonl');

CREATE TABLE cumulate_out (window_start TIMESTAMP, window_end TIMESTAMP, price DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/window_tvf_cumulate');

CREATE TABLE offset_out (window_start TIMESTAMP, window_end TIMESTAMP, price DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/window_tvf_offset');

CREATE TABLE sets_out (window_start TIMESTAMP, window_end TIMESTAMP, supplier_id STRING, price DOUBLE, g BIGINT)
WITH (type = 'file', filePath = '../../out/examples/sql/window_tvf_sets');

CREATE TABLE top3_out (bidtime TIMESTAMP, price DOUBLE, item STRING, supplier_id STRING,
                       window_start TIMESTAMP, window_end TIMESTAMP, rownum BIGINT)
WITH (type = 'file', filePath = '../../out/examples/sql/window_tvf_top3');

CREATE TABLE last_out (bidtime TIMESTAMP, price DOUBLE, item STRING, supplier_id STRING,
                       window_start TIMESTAMP, window_end TIMESTAMP, rownum BIGINT)
WITH (type = 'file', filePath = '../../out/examples/sql/window_tvf_last');

-- windows [08:00, 08:06), [08:00, 08:08), [08:00, 08:10), [08:10, 08:12), ...
INSERT INTO cumulate_out
SELECT window_start, window_end, SUM(price)
FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))
GROUP BY window_start, window_end;

-- windows [08:01, 08:11), [08:11, 08:21)
INSERT INTO offset_out
SELECT window_start, window_end, SUM(price)
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, INTERVAL '1' MINUTES))
GROUP BY window_start, window_end;

INSERT INTO sets_out
SELECT window_start, window_end, supplier_id, SUM(price) AS price, GROUPING(supplier_id) AS g
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), ());

-- the three highest bids of each window
INSERT INTO top3_out
SELECT *
FROM (
  SELECT bidtime, price, item, supplier_id, window_start, window_end,
    ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum
  FROM TABLE(TUMBLE(TABLE BidTopN, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
) WHERE rownum <= 3;

-- the last bid of each window
INSERT INTO last_out
SELECT *
FROM (
  SELECT bidtime, price, item, supplier_id, window_start, window_end,
    ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY bidtime DESC) AS rownum
  FROM TABLE(TUMBLE(TABLE BidTopN, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
) WHERE rownum <= 1;
