"""Write etl/sql/spark_functions.txt: the names of Spark's built-in SQL functions (one per line).

    PYTHONPATH=. python scripts/spark_functions.py

The SQL front-end reads the list to tell an unknown function (with a did-you-mean) from a Spark one
without starting a JVM. Run it again after a pyspark upgrade.
"""

from pathlib import Path

from pyspark.sql import SparkSession

OUT = Path(__file__).resolve().parents[1] / "etl" / "sql" / "spark_functions.txt"

if __name__ == "__main__":
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    names = sorted({r[0].lower() for r in spark.sql("SHOW FUNCTIONS").collect() if r[0].replace("_", "").isalnum()})
    OUT.write_text("".join(n + "\n" for n in names))
    print(f"{len(names)} functions -> {OUT}")
    spark.stop()
