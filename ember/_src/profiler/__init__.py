"""ember.profiler's implementation: trace collection (trace.py) and the device memory
profile (memory.py). Kept import-light: jit.py and stages.py import `trace` for its hooks."""
