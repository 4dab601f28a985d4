-- temporal_join: Flink's event-time temporal join as its "Joins" page shows it: each order joins the currency
-- rate valid at the order's time (the newest version of its currency at or before it), once both watermarks have
-- passed the order; currency_rates is a versioned table (PRIMARY KEY and WATERMARK: each row a new version of its
-- currency). LEFT JOIN writes an order without a rate with a NULL rate, JOIN drops it; the rows are the documented
-- ones (pipelines/sql/temporal_join.tests.yaml). Another ON condition is Flink's join condition, on the version an
-- order joins: false is no version (an older one that passes it is not tried).
CREATE TABLE orders (
  order_id STRING, price DECIMAL(32, 2), currency STRING, order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time
) WITH (type = 'file', filePath = '../data/temporal_orders.jsonl');

CREATE TABLE currency_rates (
  currency STRING, conversion_rate DECIMAL(32, 2), update_time TIMESTAMP(3),
  WATERMARK FOR update_time AS update_time,
  PRIMARY KEY (currency) NOT ENFORCED
) WITH (type = 'file', filePath = '../data/temporal_rates.jsonl');

CREATE TABLE priced (order_id STRING, price DECIMAL(32, 2), currency STRING, conversion_rate DECIMAL(32, 2),
                     order_time TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/temporal_join_left');

CREATE TABLE priced_low (order_id STRING, conversion_rate DECIMAL(32, 2))
WITH (type = 'file', filePath = '../../out/examples/sql/temporal_join_low');

CREATE TABLE priced_inner (order_id STRING, price DECIMAL(32, 2), currency STRING, conversion_rate DECIMAL(32, 2),
                           order_time TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/temporal_join_inner');

INSERT INTO priced
SELECT order_id, price, orders.currency, conversion_rate, order_time
FROM orders
LEFT JOIN currency_rates FOR SYSTEM_TIME AS OF orders.order_time
ON orders.currency = currency_rates.currency;

INSERT INTO priced_inner
SELECT o.order_id, o.price, o.currency, r.conversion_rate, o.order_time
FROM orders AS o
JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r
ON o.currency = r.currency;

INSERT INTO priced_low
SELECT o.order_id, r.conversion_rate
FROM orders AS o
LEFT JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r
ON o.currency = r.currency AND r.conversion_rate < 1.12;
