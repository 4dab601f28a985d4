-- windows: Flink's window table function (HOP), a session window with HAVING and COUNT(DISTINCT),
-- and EMIT early results before the watermark closes a tumbling window.
CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '30' SECOND
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE sliding_out (country VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, orders BIGINT, revenue DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/windows/sliding');
CREATE TABLE sessions_out (customer VARCHAR, session_start TIMESTAMP, session_end TIMESTAMP, countries BIGINT,
                           orders BIGINT)
WITH (type = 'file', filePath = '../../out/examples/sql/windows/sessions');
CREATE TABLE early_out (status VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, n BIGINT)
WITH (type = 'print');

INSERT INTO sliding_out
SELECT country, window_start, window_end, COUNT(*) AS orders, SUM(amount) AS revenue
FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE))
GROUP BY window_start, window_end, country;

INSERT INTO sessions_out
SELECT customer, SESSION_START(ts, INTERVAL '2' MINUTE), SESSION_END(ts, INTERVAL '2' MINUTE),
       COUNT(DISTINCT country), COUNT(*)
FROM orders
GROUP BY SESSION(ts, INTERVAL '2' MINUTE), customer
HAVING COUNT(*) >= 2;

INSERT INTO early_out
SELECT status, TUMBLE_START(ts, INTERVAL '10' MINUTE), TUMBLE_END(ts, INTERVAL '10' MINUTE), COUNT(*)
FROM orders
GROUP BY TUMBLE(ts, INTERVAL '10' MINUTE), status
EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK;
