"""Optimization passes: one file per pass (module -> module), and the pipeline. (Partitioning
a jit's jaxpr over a device mesh happens before lowering: driver/sharding_propagation.py.)"""
