-- grok: Logstash's grok in SQL. GROK(field, 'pattern') is a struct of the pattern's captures, typed as
-- their :int says, NULL for a line that does not match; LATERAL TABLE(GROK(...)) gives its fields as
-- columns, one row per line that matches. Both run the YAML grok transform (grok.yaml is the twin).
CREATE TABLE access (line VARCHAR) WITH (type = 'file', filePath = '../data/access.log', format = 'text');

CREATE TABLE requests (client VARCHAR, method VARCHAR, path VARCHAR, status INT, bytes INT)
WITH (type = 'file', filePath = '../../out/examples/sql/requests');
CREATE TABLE refused (client VARCHAR, status INT) WITH (type = 'file', filePath = '../../out/examples/sql/refused');

INSERT INTO requests
SELECT r.client, r.method, r.path, r.status, r.bytes
FROM access, LATERAL TABLE(GROK(line, '%{IPORHOST:client} %{USER} %{USER} \[%{HTTPDATE}\] "%{WORD:method} %{NOTSPACE:path} HTTP/%{NUMBER}" %{INT:status:int} (?:%{INT:bytes:int}|-)')) AS r(client, method, path, status, bytes);

-- a line that does not match gives a NULL struct: its status is NULL, and the WHERE drops it
INSERT INTO refused
SELECT GROK(line, '^%{IPORHOST:client} .*" %{INT:status:int} ').client,
       GROK(line, '^%{IPORHOST:client} .*" %{INT:status:int} ').status
FROM access
WHERE GROK(line, '^%{IPORHOST:client} .*" %{INT:status:int} ').status >= 400;
