"""Optimization passes: one file per pass (module -> module), and the pipeline; and
sharding_propagation.py, which partitions a jit's jaxpr over a device mesh before lowering
(one device's program, run on every device by spmd.py)."""
