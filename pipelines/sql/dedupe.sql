-- dedupe: Flink's deduplication query (ROW_NUMBER() ... WHERE rn = 1) keeps the first order per id
-- within the watermark; then a Blink-style built-in (SPLIT_INDEX) in the projection.
CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE out (order_id VARCHAR, region VARCHAR, amount DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/dedupe');

INSERT INTO out
SELECT order_id, SPLIT_INDEX(order_id, '-', 0) AS region, amount
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY ts ASC) AS rn
  FROM orders
)
WHERE rn = 1;
