"""Regular expressions with Python's ``re.search`` meaning, carried to other engines (pure Python).

* ``hsregex``: Python ``re`` patterns -> Hyperscan expressions (or why not: ``hyperscan_rejects``);
* ``javaregex``: the same -> java.util.regex (the JVM rule path);
* ``hsbound``: Hyperscan compiles under a time budget;
* ``ucd``/``ucd_tables``: the Unicode facts Python's ``re`` relies on.

Validation (etl.graph) asks ``hyperscan_rejects`` about each rule pattern; the
optimizer passes (etl.optimize) translate the patterns they merge. Nothing
here imports the optimizer, the graph or pyspark.
"""
