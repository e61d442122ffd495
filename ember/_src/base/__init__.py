"""The base layer: what every other layer uses and that imports nothing of ember's above it.
Errors, flags and config, dtypes, pytrees, the abstract `Array` type, the buffer pool, the
persistent cache's store and the profiler's event recorder (`profiler_events`)."""
