"""ember.profiler's implementation: trace collection (trace.py) and the device memory
profile (memory.py). The traced code records into
`base/profiler_events` (import-light, below everything)."""
