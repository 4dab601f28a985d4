"""The built-in sinks, one package each (see etl.components)."""
