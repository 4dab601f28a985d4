"""The starter pipelines `etl init` writes (etl/commands/init.py): one folder per template, copied as is."""
