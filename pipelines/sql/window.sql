-- window: generated API calls -> 1-minute tumbling window per endpoint -> console and jsonl
-- (the SQL twin of window.yaml; `etl explain` prints the same plan for both). The GROUP BY key
-- lower(endpoint) and the argument of SUM(CASE ...) are expressions: a derive step computes them first.
CREATE TABLE calls (
  ts TIMESTAMP(3),
  endpoint VARCHAR,
  latency_ms BIGINT,
  WATERMARK FOR ts AS ts - INTERVAL '10' SECOND
) WITH (
  type = 'generator',
  count = '6000',
  rate = '20',
  seed = '42',
  start_time = '2026-01-10T09:00:00Z',
  'fields.ts.timestamp' = 'event',
  'fields.endpoint.choice' = '/search,/cart,/checkout',
  'fields.endpoint.weights' = '6,3,1',
  'fields.latency_ms.int_range' = '5,800'
);

CREATE TABLE console (endpoint VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, calls BIGINT,
                      avg_latency_ms DOUBLE, max_latency_ms BIGINT, slow_calls BIGINT)
WITH (type = 'print', format = 'table');

CREATE TABLE out (endpoint VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, calls BIGINT,
                  avg_latency_ms DOUBLE, max_latency_ms BIGINT, slow_calls BIGINT)
WITH (type = 'file', filePath = '../../out/examples/sql/window');

CREATE VIEW per_minute AS
SELECT lower(endpoint) AS endpoint,
       TUMBLE_START(ts, INTERVAL '1' MINUTE) AS window_start,
       TUMBLE_END(ts, INTERVAL '1' MINUTE) AS window_end,
       COUNT(*) AS calls,
       AVG(latency_ms) AS avg_latency_ms,
       MAX(latency_ms) AS max_latency_ms,
       SUM(CASE WHEN latency_ms >= 500 THEN 1 ELSE 0 END) AS slow_calls
FROM calls
GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), lower(endpoint);

INSERT INTO console SELECT * FROM per_minute;
INSERT INTO out SELECT * FROM per_minute;
