"""The pipeline spec's core: the base classes and traits every component spec builds on (etl.spec.base), the
pipeline model (etl.spec.pipeline), rules, Sigma, functions and the parts several components share.

The components' own specs live in their packages (etl/components/<kind>s/<type>/spec.py); the registry imports
them by name (etl.registry.BUILTINS), so this package imports none of them.
"""
