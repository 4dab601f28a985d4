"""The built-in transforms, one package each (see etl.components)."""
