"""ember.extend: interfaces for libraries built on ember (jax.extend).

Left out: `mlir` (MLIR bytecode artifacts), `sharding` (XLA's sharding protos), `xla`
(XLA's HLO-module transformation hooks), `pallas` (ember has no Pallas)."""
from ember.extend import (  # noqa: F401
    backend, core, linear_util, lowering, random, source_info_util)
