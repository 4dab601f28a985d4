-- filter: the rule-shaped part of WHERE (LIKE / REGEXP / comparisons with literals, ANDed and ORed)
-- runs through the filter optimizer as rules; the rest stays a Spark SQL condition.
CREATE TABLE orders (
  order_id VARCHAR,
  customer VARCHAR,
  country VARCHAR,
  amount DOUBLE,
  status VARCHAR,
  ts TIMESTAMP
) WITH (type = 'file', filePath = '../data/orders.jsonl', isJsonData = 'true');

CREATE TABLE out (order_id VARCHAR, customer VARCHAR, amount DOUBLE, status VARCHAR, note VARCHAR)
WITH (type = 'file', filePath = '../../out/examples/sql/filter');

/* big paid orders of watched customers, or anything from a test account */
CREATE VIEW flagged AS
SELECT order_id, customer, amount, status, upper(country) AS note
FROM orders
WHERE (status = 'paid' AND amount >= 500 AND customer IN ('umbrella', 'stark'))
   OR order_id LIKE 'test-%'
   OR customer REGEXP '^qa[0-9]+$';

INSERT INTO out SELECT * FROM flagged WHERE length(order_id) > 3;
