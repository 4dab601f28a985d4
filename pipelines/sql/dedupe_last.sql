-- dedupe_last: Flink's keep-last deduplication (ROW_NUMBER() ... ORDER BY ts DESC ... WHERE rn = 1):
-- the newest status of each order by event time. After each micro-batch an order that got a newer
-- event goes out again: the es index keeps the latest document per order (its PRIMARY KEY is the
-- document id); the file gets every newer row. An event older than the order's newest is dropped.
CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE order_status (order_id VARCHAR, status VARCHAR, amount DOUBLE, ts TIMESTAMP(3),
                           PRIMARY KEY (order_id) NOT ENFORCED)
WITH (type = 'es', endPoint = '{{ env("ES_HOST", "127.0.0.1") }}', port = '9200', esIndex = 'order_status');

CREATE TABLE status_log (order_id VARCHAR, status VARCHAR, amount DOUBLE, ts TIMESTAMP(3))
WITH (type = 'file', filePath = '../../out/examples/sql/dedupe_last');

CREATE VIEW latest AS
SELECT order_id, status, amount, ts
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY ts DESC) AS rn
  FROM orders
)
WHERE rn = 1;

INSERT INTO order_status SELECT * FROM latest;
INSERT INTO status_log SELECT * FROM latest;
