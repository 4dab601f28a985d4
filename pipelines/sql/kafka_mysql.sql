-- kafka -> mysql (Flink style): JSON requests on Kafka, server errors and health checks dropped, counted
-- per service and minute, upserted into MySQL on the PRIMARY KEY (service, window_start). The addresses
-- come from env() (tests/integration/test_sql_servers.py points them at the test servers), the topic
-- from `--var topic=...`. Like Flink's JDBC sink, the MySQL table must exist (see the README).
SET 'pipeline.name' = 'sql-kafka-mysql';
SET 'vars.topic' = 'requests';
SET 'checkpoint' = '.etl/sql-kafka-mysql/checkpoint';

CREATE TABLE requests (
  ts TIMESTAMP(3),
  service STRING,
  endpoint STRING,
  status INT,
  latency_ms DOUBLE,
  user_id STRING,
  WATERMARK FOR ts AS ts - INTERVAL '30' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{{ vars.topic }}',
  'properties.bootstrap.servers' = '{{ env("KAFKA_BOOTSTRAP", "127.0.0.1:9092") }}',
  'properties.group.id' = 'etl-sql-kafka-mysql',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE service_minute_stats (
  service STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  requests BIGINT,
  avg_latency_ms DOUBLE,
  max_latency_ms DOUBLE,
  users BIGINT,
  PRIMARY KEY (service, window_start) NOT ENFORCED
) WITH (
  'connector' = 'jdbc',
  'url' = 'jdbc:mysql://{{ env("MYSQL_HOST", "127.0.0.1") }}:{{ env("MYSQL_PORT", "3306") }}/{{ env("MYSQL_DATABASE", "etl") }}',
  'table-name' = 'sql_service_minute_stats',
  'username' = '{{ env("MYSQL_USER", "etl") }}',
  'password' = '{{ env("MYSQL_PASSWORD", "etl") }}'
);

INSERT INTO service_minute_stats
SELECT service,
       TUMBLE_START(ts, INTERVAL '1' MINUTE) AS window_start,
       TUMBLE_END(ts, INTERVAL '1' MINUTE) AS window_end,
       COUNT(*) AS requests,
       AVG(latency_ms) AS avg_latency_ms,
       MAX(latency_ms) AS max_latency_ms,
       COUNT(DISTINCT user_id) AS users
FROM requests
WHERE status < 500 AND endpoint NOT LIKE '/health%'
GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), service;
