"""The lookup engines: enrich a stream from a dimension table.

`dimension` joins events with the table by one of three engines the physical planner picks:
`broadcast` (Spark's broadcast hash join), `rocksdb-python` (a rocksdb store read by Python
workers) and `rocksdb-jvm` (the same store held by the JVM on a local master, `jvm`).
`store` builds and refreshes the rocksdict stores on local disk that both rocksdb engines read.
"""
