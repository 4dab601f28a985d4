-- lateral: Blink's built-in table functions. Each order's id is split on '-' into one row per part
-- (STRING_SPLIT), with the part's position from GENERATE_SERIES on a second query.
CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE parts (order_id VARCHAR, part VARCHAR) WITH (type = 'file', filePath = '../../out/examples/sql/parts');
CREATE TABLE tiers (customer VARCHAR, tier INT) WITH (type = 'file', filePath = '../../out/examples/sql/tiers');

INSERT INTO parts
SELECT o.order_id, p.part
FROM orders AS o, LATERAL TABLE(STRING_SPLIT(o.order_id, '-')) AS p(part);

-- one row per tier up to the order's hundreds (an order of 250.0 reaches tiers 1 and 2)
INSERT INTO tiers
SELECT customer, tier
FROM orders
LEFT JOIN LATERAL TABLE(GENERATE_SERIES(1, CAST(amount / 100 AS INT))) AS t(tier) ON TRUE
WHERE status = 'paid';
