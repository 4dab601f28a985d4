-- window_late: orders per customer per 10-minute tumbling window, with both EMIT strategies:
-- a provisional row at most every minute before the watermark passes the window's end, then, after
-- it, updates for late orders (at most one update row per window every 5 seconds) for as long as
-- the allowed lateness (Flink's option below) keeps the closed window in state.
SET 'table.exec.emit.allow-lateness' = '30 min';

CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE out (customer VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, orders BIGINT, total DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/window_late');

INSERT INTO out
SELECT customer, TUMBLE_START(ts, INTERVAL '10' MINUTE), TUMBLE_END(ts, INTERVAL '10' MINUTE),
       COUNT(*), SUM(amount)
FROM orders
GROUP BY TUMBLE(ts, INTERVAL '10' MINUTE), customer
EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK, WITH DELAY '5' SECOND AFTER WATERMARK;
