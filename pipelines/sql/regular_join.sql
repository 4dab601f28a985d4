-- regular_join: Flink's regular join, a stream join without a time bound (its "Joins" page: SELECT * FROM Orders
-- INNER JOIN Product ON Orders.product_id = Product.id): every order and every product row is kept in the state of
-- its product_id and joined with every row the other side has kept for it, each pair written once, when its second
-- row arrives; another ON condition drops the pairs it is not true for; a NULL product_id joins nothing. The state
-- TTL (processing time) drops a kept row 1 d after it was stored; without it the state grows without bound (W015
-- at the JOIN). The rows: pipelines/sql/regular_join.tests.yaml.
SET 'table.exec.state.ttl' = '1 d';

CREATE TABLE orders (order_id STRING, product_id STRING, qty INT)
WITH (type = 'file', filePath = '../data/regular_orders.jsonl');

CREATE TABLE products (product_id STRING, name STRING, max_qty INT)
WITH (type = 'file', filePath = '../data/regular_products.jsonl');

CREATE TABLE ordered (order_id STRING, product_id STRING, name STRING, qty INT)
WITH (type = 'file', filePath = '../../out/examples/sql/regular_join');

INSERT INTO ordered
SELECT o.order_id, o.product_id, p.name, o.qty
FROM orders AS o
JOIN products AS p ON o.product_id = p.product_id AND o.qty <= p.max_qty;
