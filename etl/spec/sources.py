"""What several sources share: MessageSource (the kafka and rocketmq sources' base) and the Maven coordinates of the
connectors' jars (etl/components/sources/<type>/spec.py holds each source)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.spec.base import SourceBase

# the versions of java/pom.xml's `spark` profile (tests/unit/test_jars.py compares): Spark's Kafka connector (4.2.0,
# the newest on Maven Central, runs on pyspark 4.3.0) with the token provider the pom pins, MariaDB Connector/J
KAFKA_JARS = ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
              "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0")
MYSQL_JARS = ("org.mariadb.jdbc:mariadb-java-client:3.5.11",)


class MessageSource(SourceBase):
    LIVE: ClassVar[bool] = True  # events arrive as they happen: event times past now + ETL_EVENT_TIME_HORIZON fail
    REREADS_EXACTLY: ClassVar[bool] = True  # a micro-batch is a range of offsets
    format: Literal["json", "text", "raw"] = Field(default="json", description="how to decode message values")
    value_column: str = Field(default="value", description="text/raw: column holding the message body")

    def engine_aspects(self) -> tuple[str, ...]:
        return ("parser",) if self.format == "json" else ()

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        return True  # malformed json, an event time beyond the horizon

    def declared_columns(self) -> dict[str, str] | None:
        if self.format != "json":
            return {"key": "string", self.value_column: "string", "topic": "string", "timestamp": "timestamp"}
        return self.schema_
