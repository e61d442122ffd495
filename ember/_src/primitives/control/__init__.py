"""Control flow: the higher-order primitives `cond`, `while` and `scan` (each holding
sub-jaxprs in its params, printed as JAX 0.12 prints them), the `lax` functions built on them,
and the identity-valued primitives stop_gradient and optimization_barrier. One module per
construct, each primitive declared once with its rules beside it (abstract eval, eager
evaluation, jvp, transpose, batching, lowering):

- conditionals.py: `cond`; lax.cond, lax.switch
- loops.py: `while`; lax.while_loop, lax.fori_loop
- scans.py: `scan`; lax.scan, lax.map, lax.associative_scan
- barriers.py: stop_gradient, optimization_barrier, copy, stage
- solves.py: `linear_solve`; lax.custom_linear_solve
- common.py: what the constructs share (tracing sub-jaxprs, carry and branch checks, jaxpr
  surgery, the jvp/batching/lowering of a sub-jaxpr)

Differentiation splits each jvp into a known (primal) and an unknown (tangent) equation, as
JAX's partial evaluation of these primitives does, so linearize/grad keep the primal loop out
of the linear jaxpr.

This package is the front door of the family (the `lax` functions and the primitives
gathered): `ember.lax` gathers its functions family by family (library/lax/api.py: `import *`
and every `*_p`), and callers use the family as one namespace (`control.switch`,
`control.scan`, `control.while_loop` in checkify). The modules are named for constructs, not
for a function (`scans.py` defines `scan`), so no gathered function hides a module.
"""
from ember._src.primitives.control.barriers import (  # noqa: F401
    copy_p, optimization_barrier, optimization_barrier_p, stage, stage_p, stop_gradient,
    stop_gradient_p)
from ember._src.primitives.control.conditionals import cond, cond_p, switch  # noqa: F401
from ember._src.primitives.control.loops import fori_loop, while_loop, while_p  # noqa: F401
from ember._src.primitives.control.scans import (  # noqa: F401
    associative_scan, map, scan, scan_p)
from ember._src.primitives.control.solves import (  # noqa: F401
    custom_linear_solve, linear_solve_p)

__all__ = ["stop_gradient", "optimization_barrier", "cond", "switch", "while_loop",
           "fori_loop", "scan", "map", "associative_scan", "custom_linear_solve", "stage"]
