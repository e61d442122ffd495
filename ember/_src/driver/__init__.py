"""The driver: `jit`'s front door (signatures, caches), the compile driver (trace ->
lower -> passes -> backend), the cached-call dispatcher, checked mode, cache-miss
explanations, where a call runs (PJRT devices) and how a jit's shardings propagate."""
