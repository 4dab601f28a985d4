-- join + lookup: impressions joined with clicks within 1 minute (stream-stream, LEFT keeps
-- impressions without a click), then clicks enriched from a dimension table (users.csv).
CREATE TABLE impressions (
  ad_id VARCHAR, user_id VARCHAR, ts TIMESTAMP,
  WATERMARK FOR ts AS ts - INTERVAL '30' SECOND
) WITH (type = 'file', filePath = '../data/impressions.jsonl');

CREATE TABLE clicks (
  ad_id VARCHAR, user_id VARCHAR, ts TIMESTAMP,
  WATERMARK wk FOR ts AS withOffset(ts, 30000)
) WITH ('connector' = 'filesystem', 'path' = '../data/ad_clicks.jsonl', 'format' = 'json');

CREATE TABLE page_clicks (user_id VARCHAR, page VARCHAR, ts TIMESTAMP, pt AS PROCTIME())
WITH (type = 'file', filePath = '../data/clicks.jsonl');

CREATE TABLE users (user_id VARCHAR, name VARCHAR, tier VARCHAR, country VARCHAR, PRIMARY KEY (user_id) NOT ENFORCED)
WITH (type = 'file', filePath = 'data/users.csv', format = 'csv', header = 'true');

CREATE TABLE ctr (ad_id VARCHAR, user_id VARCHAR, ts TIMESTAMP, clicks_ts TIMESTAMP)
WITH (type = 'file', filePath = '../../out/examples/sql/join');

CREATE TABLE enriched (user_id VARCHAR, page VARCHAR, ts TIMESTAMP, name VARCHAR, tier VARCHAR)
WITH (type = 'file', filePath = '../../out/examples/sql/lookup');

INSERT INTO ctr
SELECT i.ad_id, i.user_id, i.ts, c.ts
FROM impressions AS i
LEFT JOIN clicks AS c
  ON i.ad_id = c.ad_id AND i.user_id = c.user_id
 AND c.ts BETWEEN i.ts - INTERVAL '1' MINUTE AND i.ts + INTERVAL '1' MINUTE;

INSERT INTO enriched
SELECT p.user_id, p.page, p.ts, u.name, u.tier
FROM page_clicks AS p
LEFT JOIN users FOR SYSTEM_TIME AS OF p.pt AS u ON p.user_id = u.user_id;
