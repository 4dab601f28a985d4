-- rsqldb style: the forms rsqldb / Blink scripts use, unchanged: unquoted WITH keys, backticked names,
-- `primary key`, a Blink watermark (withOffset), EMIT on the INSERT that reads a windowed view,
-- a HOP window (over ts: over the PROCTIME() column pt it is E320, one watermark per Spark query), and a TUMBLE TVF.
CREATE TABLE user_clicks
(
    `username`      VARCHAR,
    `click_url`     VARCHAR,
    `ts`            TIMESTAMP,
    pt AS PROCTIME(),
    WATERMARK wk FOR ts AS withOffset(ts, 2000),
    primary key (username)
) WITH (
      type = 'rocketmq',
      topic = 'user_clicks',
      groupName = 'user_clicks',
      namesrvAddr = '{{ env("ROCKETMQ_NAMESRV", "127.0.0.1:9876") }}',
      isJsonData = 'true',
      msgIsJsonArray = 'false'
      );

CREATE TABLE per_user (window_start TIMESTAMP, username VARCHAR, clicks BIGINT) WITH (type = 'print');
CREATE TABLE recent (window_start TIMESTAMP, window_end TIMESTAMP, username VARCHAR, clicks BIGINT)
WITH (type = 'print');
CREATE TABLE per_url (url VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, users BIGINT)
WITH (type = 'print');

CREATE VIEW clicks_view AS
SELECT TUMBLE_START(ts, INTERVAL '10' MINUTE) AS window_start,
       username                               AS username,
       count(click_url)                       AS clicks
FROM user_clicks
GROUP BY TUMBLE(ts, INTERVAL '10' MINUTE), username;

INSERT INTO per_user
SELECT * FROM clicks_view
EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK;

INSERT INTO recent
SELECT HOP_START(ts, INTERVAL '30' SECOND, INTERVAL '1' MINUTE) AS window_start,
       HOP_END(ts,   INTERVAL '30' SECOND, INTERVAL '1' MINUTE)   AS window_end,
       username,
       COUNT(click_url)                                         AS clicks
FROM user_clicks
GROUP BY HOP(ts, INTERVAL '30' SECOND, INTERVAL '1' MINUTE), username;

INSERT INTO per_url
SELECT click_url AS url, window_start, window_end, COUNT(DISTINCT username) AS users
FROM TABLE(TUMBLE(TABLE user_clicks, DESCRIPTOR(ts), INTERVAL '5' MINUTE))
GROUP BY window_start, window_end, click_url;
