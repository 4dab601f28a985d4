"""Running queries: the Spark session, query lifecycle, AbstractSink batching, checkpoints, progress."""
