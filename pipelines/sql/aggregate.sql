-- aggregate: a GROUP BY without a window is a continuously updated aggregate. After each
-- micro-batch, one row per customer whose totals changed: upserted by its PRIMARY KEY into the
-- db table (the latest row per customer is kept), appended as a changelog to the file (each row
-- flagged `_update`: true when it replaces the customer's previous row). `etl explain` says which.
CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE totals_db (customer VARCHAR, orders BIGINT, revenue DOUBLE, PRIMARY KEY (customer) NOT ENFORCED)
WITH (type = 'rds', url = 'jdbc:mysql://{{ env("MYSQL_HOST", "127.0.0.1") }}:3306/etl', tableName = 'totals',
      userName = 'etl', password = '{{ env("MYSQL_PASSWORD", "etl") }}');

CREATE TABLE changelog (customer VARCHAR, orders BIGINT, revenue DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/aggregate');

CREATE VIEW totals AS
SELECT customer, COUNT(*) AS orders, SUM(amount) AS revenue
FROM orders
WHERE status = 'paid'
GROUP BY customer;

INSERT INTO totals_db SELECT * FROM totals;
INSERT INTO changelog SELECT * FROM totals;
