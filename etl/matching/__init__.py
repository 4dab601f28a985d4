"""The rule runtime: what executors import to run a compiled FilterProgram.

The optimizer (:mod:`etl.optimize`, driver side) builds a
:class:`~etl.matching.ir.FilterProgram`; the matcher runs it over pyarrow
batches in the Python workers. Nothing here imports the optimizer passes,
Hyperscan's compiler or pyspark: a worker loads only this package.

* ``ir``: the program (plain frozen dataclasses), shared with the optimizer;
* ``matcher``: runs a program over RecordBatches (``batch``: column access and
  native predicates; ``ruletree``: rule trees; ``fpcache``: the
  pre-fingerprint cache; ``regex_budget``: the Python ``re`` time budget);
* ``merged``: splitting the result of sibling filters that share one pass;
* ``hsdb``: compiling a Hyperscan database (an executor on another CPU than the driver's).
"""
