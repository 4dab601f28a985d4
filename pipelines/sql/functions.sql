-- functions: Python functions (order_functions.py beside this script) in SQL: a scalar function in a
-- projection, a table function in LATERAL TABLE, an aggregate function in a windowed GROUP BY.
-- (the SQL twin of functions.yaml; `etl explain` prints the same plan for both)
CREATE FUNCTION mask_name AS 'order_functions:mask';
CREATE FUNCTION id_parts AS 'order_functions:id_parts' LANGUAGE PYTHON;
CREATE FUNCTION spread AS 'order_functions:spread' LANGUAGE PYTHON;

CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '10' SECOND
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE masked (order_id VARCHAR, who VARCHAR) WITH (type = 'file', filePath = '../../out/examples/sql/masked');
CREATE TABLE id_parts_out (order_id VARCHAR, part VARCHAR, pos BIGINT)
WITH (type = 'file', filePath = '../../out/examples/sql/id_parts');
CREATE TABLE spreads (country VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, amount_spread DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/spreads');

INSERT INTO masked
SELECT order_id, mask_name(customer) AS who FROM orders;

INSERT INTO id_parts_out
SELECT o.order_id, p.part, p.pos
FROM orders AS o, LATERAL TABLE(id_parts(o.order_id)) AS p(part, pos);

INSERT INTO spreads
SELECT country,
       TUMBLE_START(ts, INTERVAL '1' MINUTE) AS window_start,
       TUMBLE_END(ts, INTERVAL '1' MINUTE) AS window_end,
       spread(amount) AS amount_spread
FROM orders
GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), country;
