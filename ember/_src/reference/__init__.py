"""The NumPy reference kernels: XLA/StableHLO semantics of each operation in NumPy.

The bottom of ember's layers (docs/architecture.md): the primitives' eager impls, the
HLO reference evaluator (`hlo_eval`, checked mode, constant folding) and the CPU
backend's host thunks all call these, so each operation's semantics is written once.
Nothing here imports from the rest of ember except `dtypes` and `config`.
"""
