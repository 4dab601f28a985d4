-- aggregate_every: a continuously updated aggregate (GROUP BY without a window) with a Python aggregate
-- function (order_functions.py:spread beside this script) and EMIT WITH DELAY ... BEFORE WATERMARK, which
-- on a GROUP BY without a window caps how often a country's row goes out: the query writing `by_country`
-- runs a micro-batch at most every 2 seconds, so a country gets at most one row per 2 s, with its latest
-- values (the aggregate's `every: 2s`). The function sees all of a country's amounts after each
-- micro-batch that changed it; when it raises, the country's row of that micro-batch is a dead letter and
-- its state stays as it was, so its next row goes on from its last good values.
-- (the SQL twin of aggregate_every.yaml; `etl explain` prints the same plan for both)
CREATE FUNCTION spread AS 'order_functions:spread' LANGUAGE PYTHON;

CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE by_country (country VARCHAR, orders BIGINT, revenue DOUBLE, amount_spread DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/aggregate_every');

INSERT INTO by_country
SELECT country, COUNT(*) AS orders, SUM(amount) AS revenue, spread(amount) AS amount_spread
FROM orders
WHERE status = 'paid'
GROUP BY country
EMIT WITH DELAY '2' SECOND BEFORE WATERMARK;
