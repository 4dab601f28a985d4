-- rocketmq -> elasticsearch (rsqldb style): JSON orders on RocketMQ (only the tag 'paid'), the small ones
-- dropped, enriched from a MySQL dimension table, indexed into Elasticsearch / OpenSearch with the order
-- id as document id. The addresses come from env() (tests/integration/test_sql_servers.py points them at
-- the test servers), the topic and index from `--var topic=... --var index=...`.
SET 'pipeline.name' = 'sql-rocketmq-es';
SET 'vars.topic' = 'orders';
SET 'vars.index' = 'paid-orders';
SET 'checkpoint' = '.etl/sql-rocketmq-es/checkpoint';

CREATE TABLE orders (
  order_id VARCHAR,
  user_id VARCHAR,
  amount DOUBLE,
  item VARCHAR
) WITH (
  type = 'rocketmq',
  topic = '{{ vars.topic }}',
  tag = 'paid',
  groupName = 'etl-sql-rocketmq-es',
  namesrvAddr = '{{ env("ROCKETMQ_NAMESRV", "127.0.0.1:9876") }}',
  isJsonData = 'true',
  msgIsJsonArray = 'false'
);

CREATE TABLE customers (
  user_id VARCHAR,
  name VARCHAR,
  tier VARCHAR,
  PRIMARY KEY (user_id) NOT ENFORCED
) WITH (
  type = 'db',
  url = 'jdbc:mysql://{{ env("MYSQL_HOST", "127.0.0.1") }}:{{ env("MYSQL_PORT", "3306") }}/{{ env("MYSQL_DATABASE", "etl") }}',
  tableName = 'sql_customers',
  userName = '{{ env("MYSQL_USER", "etl") }}',
  password = '{{ env("MYSQL_PASSWORD", "etl") }}',
  cacheTTLMs = '60000'
);

CREATE TABLE paid_orders (
  order_id VARCHAR,
  user_id VARCHAR,
  customer VARCHAR,
  tier VARCHAR,
  amount DOUBLE,
  item VARCHAR,
  PRIMARY KEY (order_id)
) WITH (
  type = 'elasticsearch',
  endPoint = '{{ env("ES_HOST", "127.0.0.1") }}',
  port = '{{ env("ES_PORT", "9200") }}',
  esIndex = '{{ vars.index }}'
);

INSERT INTO paid_orders
SELECT o.order_id, o.user_id, COALESCE(c.name, 'unknown') AS customer, c.tier, o.amount, UPPER(o.item) AS item
FROM orders AS o
LEFT JOIN customers FOR SYSTEM_TIME AS OF PROCTIME() AS c ON o.user_id = c.user_id
WHERE o.amount >= 10;
