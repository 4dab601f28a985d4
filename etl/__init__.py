"""etl: declarative streaming ETL on PySpark Structured Streaming."""

__version__ = "0.1.0"
