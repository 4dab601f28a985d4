"""Sources and sinks, one module each; named by the specs' @component(builder=...) strings."""
