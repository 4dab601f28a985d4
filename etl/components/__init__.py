"""The built-in components, one folder each: etl/components/<kind>s/<type>/ (kind: source, transform, sink).

A component's folder holds everything it is:

* `spec.py`: its spec model, registered with `@component(kind, type, builder=...)`, and its traits (the class
  attributes and methods of etl.spec.base the core asks: stateful, updates keys, dead letters, engine aspects,
  explain and delivery lines, transport lines ...); the spec layer, imported by `etl validate` without a JVM;
* `hooks.py` (transforms): its validation and column propagation (`output_columns`, `explain_lines`, checks);
* `build.py`: its builder (a transform's `build(ctx, node, inputs)`, a source's `build(ctx, node)`, a sink's
  AbstractSink subclass), imported by name only when a pipeline runs, and the modules only it uses.

The registry finds the folders (etl.registry.BUILTINS); a third-party component is the same folder in another
package, registered through the `etl.components` entry point (docs/layout.md, "Adding a component"). Engines
several components share stay in the core: the state-store windows (etl.compile.windows), the lookup stores
(etl.compile.lookups), the joins' event-time core (etl.compile.joining), the grok library (etl.grok).
"""
