"""Source builders: `build(ctx, node) -> DataFrame | Built` (streaming)."""
