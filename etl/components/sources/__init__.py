"""The built-in sources, one package each (see etl.components)."""
