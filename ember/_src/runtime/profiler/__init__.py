"""ember.profiler's implementation: trace collection (trace.py) and the device memory
profile (memory.py). The traced code records into `events` (import-light, below everything)."""
