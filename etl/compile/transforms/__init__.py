"""One compile function per transform type, named by the spec's @component(builder=...)."""
