"""registry+v1 bundles: loading, configuration, rendering (shared/spec/bundles.md)."""
