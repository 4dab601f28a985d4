-- connectors: rsqldb / Flink WITH options for rocketmq, kafka, mysql (dimension and upsert sink)
-- and elasticsearch; UNION ALL of two streams; a computed column; templating with env().
SET 'pipeline.name' = 'sql-connectors';

-- rsqldb style: delimited messages (isJsonData = 'false') are split by fieldDelimiter
CREATE TABLE rmq_orders (
  order_id VARCHAR,
  user_id VARCHAR,
  amount DOUBLE,
  tag VARCHAR header,
  sent_at TIMESTAMP METADATA FROM 'timestamp'
) WITH (
  type = 'rocketmq',
  topic = 'orders',
  groupName = 'etl-sql',
  namesrvAddr = '{{ env("ROCKETMQ_NAMESRV", "127.0.0.1:9876") }}',
  isJsonData = 'false',
  fieldDelimiter = '|'
);

-- Flink style: quoted keys, JSON messages, a computed column
CREATE TABLE kafka_orders (
  order_id STRING,
  user_id STRING,
  amount DOUBLE,
  big AS amount >= 100
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = '{{ env("KAFKA_BOOTSTRAP", "127.0.0.1:9092") }}',
  'properties.group.id' = 'etl-sql',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE users (
  user_id VARCHAR, name VARCHAR, tier VARCHAR,
  PRIMARY KEY (user_id) NOT ENFORCED
) WITH (
  type = 'db',
  url = 'jdbc:mysql://{{ env("MYSQL_HOST", "127.0.0.1") }}:3306/etl',
  tableName = 'users',
  userName = 'etl',
  password = '{{ env("MYSQL_PASSWORD", "etl") }}',
  cacheTTLMs = '60000'
);

CREATE TABLE order_stats (user_id VARCHAR, name VARCHAR, amount DOUBLE, PRIMARY KEY (user_id) NOT ENFORCED)
WITH (type = 'rds', url = 'jdbc:mysql://127.0.0.1:3306/etl', tableName = 'order_stats', userName = 'etl',
      password = '{{ env("MYSQL_PASSWORD", "etl") }}');

CREATE TABLE order_index (order_id VARCHAR, user_id VARCHAR, amount DOUBLE, PRIMARY KEY (order_id))
WITH (type = 'es', endPoint = '127.0.0.1', port = '9200', esIndex = 'orders');

CREATE TABLE big_orders (order_id VARCHAR, amount DOUBLE)
WITH (type = 'rocketmq', namesrvAddr = '127.0.0.1:9876', topic = 'big-orders', tag = 'big');

CREATE VIEW all_orders AS
SELECT order_id, user_id, amount FROM rmq_orders WHERE tag = 'paid'
UNION ALL
SELECT order_id, user_id, amount FROM kafka_orders;

INSERT INTO order_stats
SELECT o.user_id, u.name, o.amount
FROM all_orders AS o
JOIN users FOR SYSTEM_TIME AS OF PROCTIME() AS u ON o.user_id = u.user_id;

INSERT INTO order_index SELECT * FROM all_orders;

INSERT INTO big_orders SELECT order_id, amount FROM kafka_orders WHERE big;
