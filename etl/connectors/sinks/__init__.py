"""Sinks: AbstractSink subclasses (etl.runtime.sink), constructed as `Sink(spec, SinkContext)`."""
