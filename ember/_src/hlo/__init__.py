"""The compiler's IR: the HLO graph and its text (`graph`), and the reference evaluator
that runs a graph with the NumPy kernels of `reference/` (`evaluator`: checked mode,
constant folding)."""
