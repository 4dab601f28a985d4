-- A Flink/rsqldb-style SQL script: tables (sources and sinks), a view, an INSERT. The rule-shaped part of
-- WHERE (LIKE, REGEXP, comparisons with literals) runs through the filter optimizer; its tests are in
-- pipeline.tests.yaml.   etl validate pipeline.sql    etl test pipeline.sql    etl run pipeline.sql --once
CREATE TABLE orders (
  order_id VARCHAR,
  customer VARCHAR,
  amount DOUBLE,
  status VARCHAR
) WITH (type = 'file', filePath = 'data/orders.jsonl', isJsonData = 'true');

CREATE TABLE out (order_id VARCHAR, customer VARCHAR, amount DOUBLE)
WITH (type = 'file', filePath = 'out/flagged');

CREATE VIEW flagged AS
SELECT order_id, customer, amount
FROM orders
WHERE (status = 'paid' AND amount >= 500)
   OR order_id LIKE 'test-%';

INSERT INTO out SELECT * FROM flagged;
