"""The redaction of values read from the environment lives in etl/secrets.py (a leaf every layer may import: the
plan's explain and the graph's checks need it without loading jinja and ruamel). This name stays for importers."""

from etl.secrets import (MASK, MIN_TEXT, clear, install_log_redaction, java_replacements, redact, register,
                         registered)

__all__ = ["MASK", "MIN_TEXT", "clear", "install_log_redaction", "java_replacements", "redact", "register",
           "registered"]
