"""ember.interpreters.ad: differentiation rules of primitives (jax.interpreters.ad).

`primitive_jvps[p] = rule` and `primitive_transposes[p] = rule` set the rules ember's
jvp/grad read (views onto `Primitive.jvp` / `Primitive.transpose`). `jvp` and
`jvp_jaxpr` differentiate a function on flat sequences and a closed jaxpr."""
from __future__ import annotations   # JAX's module has this too: `ad.annotations`

from ember._src.transforms.ad import (  # noqa: F401
    JVPTrace, JVPTracer, UndefinedPrimal, Zero, add_tangents, backward_pass, defjvp,
    defjvp2, defjvp_zero, deflinear, deflinear2, get_primitive_transpose, instantiate_zeros,
    is_undefined_primal, primitive_jvps, primitive_transposes, zeros_like_aval)
from ember._src.transforms.ad_api import (  # noqa: F401
    add_jaxvals, add_jaxvals_p, defbilinear, jvp, jvp_jaxpr)
