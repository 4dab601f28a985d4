-- interval_join: Flink's interval joins as its documentation writes them ("Joins", Interval Joins: the
-- three time conditions `ltime = rtime`, `ltime >= rtime AND ltime < rtime + INTERVAL '10' MINUTE`,
-- `ltime BETWEEN rtime - INTERVAL '10' SECOND AND rtime + INTERVAL '5' SECOND`, inner and outer). The
-- orders/shipments query is the documented one (FROM Orders o, Shipments s WHERE ...), on the test data
-- of Alibaba Realtime Compute for Apache Flink's interval join page, with its documented result rows;
-- an outer join's NULL-padded row goes out once the watermark has passed its interval
-- (pipelines/sql/interval_join.tests.yaml).
CREATE TABLE Orders (
  id BIGINT, productName VARCHAR, orderTime TIMESTAMP(3),
  WATERMARK FOR orderTime AS orderTime - INTERVAL '2' SECOND
) WITH (type = 'file', filePath = '../data/interval_orders.jsonl');

CREATE TABLE Shipments (
  shipId BIGINT, orderId BIGINT, status VARCHAR, shipTime TIMESTAMP(3),
  WATERMARK FOR shipTime AS shipTime - INTERVAL '2' SECOND
) WITH (type = 'file', filePath = '../data/interval_shipments.jsonl');

CREATE TABLE Pings (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (type = 'file', filePath = '../data/interval_pings.jsonl');

CREATE TABLE Pongs (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (type = 'file', filePath = '../data/interval_pongs.jsonl');

CREATE TABLE shipped_4h (id BIGINT, productName VARCHAR, status VARCHAR)
WITH (type = 'file', filePath = '../../out/examples/sql/interval_shipped_4h');

CREATE TABLE orders_4h (id BIGINT, productName VARCHAR, shipId BIGINT, status VARCHAR)
WITH (type = 'file', filePath = '../../out/examples/sql/interval_orders_4h');

CREATE TABLE range_10m (ping BIGINT, pong BIGINT) WITH (type = 'file', filePath = '../../out/examples/sql/interval_range');

CREATE TABLE same_time (ping BIGINT, pong BIGINT) WITH (type = 'file', filePath = '../../out/examples/sql/interval_same');

CREATE TABLE around (ping BIGINT, pong BIGINT) WITH (type = 'file', filePath = '../../out/examples/sql/interval_around');

-- the documented query: orders shipped within 4 hours of being placed
INSERT INTO shipped_4h
SELECT o.id, o.productName, s.status
FROM Orders o, Shipments s
WHERE o.id = s.orderId
  AND o.orderTime BETWEEN s.shipTime - INTERVAL '4' HOUR AND s.shipTime;

-- the same as a LEFT JOIN: the order shipped too late (2, 7 hours) with NULLs
INSERT INTO orders_4h
SELECT o.id, o.productName, s.shipId, s.status
FROM Orders AS o LEFT JOIN Shipments AS s
  ON o.id = s.orderId AND o.orderTime BETWEEN s.shipTime - INTERVAL '4' HOUR AND s.shipTime;

-- ltime >= rtime AND ltime < rtime + INTERVAL '10' MINUTE: the upper end is open
INSERT INTO range_10m
SELECT p.id, q.id
FROM Pings AS p JOIN Pongs AS q
  ON p.id = q.id AND p.ts >= q.ts AND p.ts < q.ts + INTERVAL '10' MINUTE;

-- ltime = rtime, FULL OUTER: a padded side's key reads NULL
INSERT INTO same_time
SELECT p.id, q.id
FROM Pings AS p FULL OUTER JOIN Pongs AS q
  ON p.id = q.id AND p.ts = q.ts;

-- ltime BETWEEN rtime - INTERVAL '10' SECOND AND rtime + INTERVAL '5' SECOND, RIGHT OUTER
INSERT INTO around
SELECT p.id, q.id
FROM Pings AS p RIGHT JOIN Pongs AS q
  ON p.id = q.id AND p.ts BETWEEN q.ts - INTERVAL '10' SECOND AND q.ts + INTERVAL '5' SECOND;
