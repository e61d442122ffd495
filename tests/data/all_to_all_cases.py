"""The all_to_all / pswapaxes calls tests/test_all_to_all.py checks against real JAX 0.12.

Shared by the test (with ember's modules) and make_all_to_all.py (with real JAX, which
wrote all_to_all.json). Each case is name -> call(jax, lax, jnp) returning an array; the
values are exact (the collectives only move elements).
"""
import numpy as np

X = np.arange(4 * 4 * 6, dtype=np.float32).reshape(4, 4, 6)
WEIGHTS = np.arange(96.0, dtype=np.float32).reshape(4, 6, 4)


def _mapped(fn, x, **vmap_kw):
  return lambda jax, lax, jnp: jax.vmap(lambda v: fn(lax, v), axis_name="i", **vmap_kw)(x)


CASES = {
    "split0_concat1": _mapped(lambda lax, v: lax.all_to_all(v, "i", 0, 1), X),
    "split0_concat0": _mapped(lambda lax, v: lax.all_to_all(v, "i", 0, 0), X),
    "split1_concat0": _mapped(lambda lax, v: lax.all_to_all(v, "i", 1, 0), X[:, :, :4]),
    "tiled_split1_concat0": _mapped(lambda lax, v: lax.all_to_all(v, "i", 1, 0, tiled=True),
                                    X[:, :, :4].reshape(4, 2, 8)),
    "tiled_split0_concat1": _mapped(lambda lax, v: lax.all_to_all(v, "i", 0, 1, tiled=True),
                                    X.reshape(4, 8, 3)),
    "batched_at_1": _mapped(lambda lax, v: lax.all_to_all(v, "i", 1, 0), X[:, :, :4],
                            in_axes=1),
    "pswapaxes_0": _mapped(lambda lax, v: lax.pswapaxes(v, "i", 0), X),
    "pswapaxes_1_jit": lambda jax, lax, jnp: jax.jit(jax.vmap(
        lambda v: lax.pswapaxes(v, "i", 1), axis_name="i"))(X[:, :, :4]),
    "other_axis_nested": lambda jax, lax, jnp: jax.vmap(jax.vmap(
        lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="j", in_axes=1), axis_name="i")(
            X[:, :, :4]),
    "grad": lambda jax, lax, jnp: jax.grad(lambda v: jnp.sum(jax.vmap(
        lambda u: lax.all_to_all(u, "i", 0, 1), axis_name="i")(v) * WEIGHTS))(
            X.reshape(4, 4, 6)),
}
