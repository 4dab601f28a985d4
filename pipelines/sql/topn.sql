-- topn: Flink's window TopN. The two customers with the most revenue in each 10-minute window
-- (ROW_NUMBER() over the window's rows, rownum <= 2), and the biggest order country of each
-- window with Flink's window table function (rownum = 1: window deduplication, a Top 1). Each
-- window's rows are ranked once, when the watermark passes its end (its final rows).
CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE top_customers (window_start TIMESTAMP, customer VARCHAR, revenue DOUBLE, rownum INT)
WITH (type = 'file', filePath = '../../out/examples/sql/topn_customers');

CREATE TABLE top_country (window_start TIMESTAMP, window_end TIMESTAMP, country VARCHAR, orders BIGINT)
WITH (type = 'file', filePath = '../../out/examples/sql/topn_country');

CREATE VIEW revenue AS
SELECT TUMBLE_START(ts, INTERVAL '10' MINUTE) AS window_start, customer, SUM(amount) AS revenue
FROM orders
GROUP BY TUMBLE(ts, INTERVAL '10' MINUTE), customer;

INSERT INTO top_customers
SELECT window_start, customer, revenue, rownum
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start ORDER BY revenue DESC) AS rownum
  FROM revenue
)
WHERE rownum <= 2;

INSERT INTO top_country
SELECT window_start, window_end, country, orders
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY orders DESC, country) AS rn
  FROM (
    SELECT window_start, window_end, country, COUNT(*) AS orders
    FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTE))
    GROUP BY window_start, window_end, country
  )
)
WHERE rn = 1;
