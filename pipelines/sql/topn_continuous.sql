-- topn_continuous: Flink's TopN without a window, a continuously updated ranking. The two biggest
-- paid orders of each country so far (ROW_NUMBER() partitioned by country, rownum <= 2), and the
-- biggest order of all (no PARTITION BY; rn = 1 ordered by amount is a Top 1, not a deduplication,
-- which orders by the time column). The state keeps each country's first two orders; after each
-- micro-batch, for each country the batch changed, the rows whose rank changed go out: upserted by
-- (country, rownum) into the db table, appended as a changelog to the file (flagged `_update`: true
-- when the row replaces the one that held its rank, which moved down or left the top two).
CREATE TABLE orders (
  order_id VARCHAR, customer VARCHAR, country VARCHAR, amount DOUBLE, status VARCHAR, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE
) WITH (type = 'file', filePath = '../data/orders.jsonl');

CREATE TABLE top_orders_db (country VARCHAR, rownum INT, order_id VARCHAR, amount DOUBLE,
                            PRIMARY KEY (country, rownum) NOT ENFORCED)
WITH (type = 'rds', url = 'jdbc:mysql://{{ env("MYSQL_HOST", "127.0.0.1") }}:3306/etl', tableName = 'top_orders',
      userName = 'etl', password = '{{ env("MYSQL_PASSWORD", "etl") }}');

CREATE TABLE top_orders (country VARCHAR, rownum INT, order_id VARCHAR, amount DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/topn_continuous');

CREATE TABLE biggest (order_id VARCHAR, customer VARCHAR, amount DOUBLE)
WITH (type = 'file', filePath = '../../out/examples/sql/topn_biggest');

CREATE VIEW ranked AS
SELECT country, rownum, order_id, amount
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY country ORDER BY amount DESC) AS rownum
  FROM orders
  WHERE status = 'paid'
)
WHERE rownum <= 2;

INSERT INTO top_orders_db SELECT * FROM ranked;
INSERT INTO top_orders SELECT * FROM ranked;

INSERT INTO biggest
SELECT order_id, customer, amount
FROM (
  SELECT *, ROW_NUMBER() OVER (ORDER BY amount DESC) AS rn
  FROM orders
)
WHERE rn = 1;
