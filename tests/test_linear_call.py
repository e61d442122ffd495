"""jax.custom_derivatives.linear_call: the call, its jvp (the same call on the tangents) and
its transpose through the user's fun_transpose, against JAX 0.12.1's values (a deliberately
wrong transpose shows that reverse mode used it)."""
import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.custom_derivatives import linear_call

X = np.full(2, 6.0, np.float32)
Y = np.full(2, 3.0, np.float32)


def f(x, y, scale=1.0):
  return x + linear_call(lambda r, v: v / r, lambda r, t: t / (scale * r), y, x)


def test_call_and_jvp():
  np.testing.assert_array_equal(f(X, Y), [8.0, 8.0])
  np.testing.assert_array_equal(jax.jit(f)(X, Y), [8.0, 8.0])
  p, t = jax.jvp(lambda x: f(x, Y), (X,), (np.ones(2, np.float32),))
  np.testing.assert_allclose(t, [4 / 3, 4 / 3], rtol=1e-6)   # JAX: 1.3333334
  jaxpr = str(jax.make_jaxpr(lambda x: f(x, Y))(X))
  assert "linear_call[" in jaxpr and "num_res=1" in jaxpr


def test_reverse_mode_uses_fun_transpose():
  # JAX 0.12.1 with the transpose t / (2 r): 1 + 1/6 = 1.1666666 (the true one gives 4/3)
  np.testing.assert_allclose(jax.grad(lambda x: f(x, Y).sum())(X), [4 / 3, 4 / 3], rtol=1e-6)
  wrong = lambda x: f(x, Y, scale=2.0)   # noqa: E731
  np.testing.assert_allclose(jax.grad(lambda x: wrong(x).sum())(X), [7 / 6] * 2, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(lambda x: wrong(x).sum()))(X), [7 / 6] * 2,
                             rtol=1e-6)
  (ct,) = jax.linear_transpose(wrong, X)(np.ones(2, np.float32))
  np.testing.assert_allclose(ct, [7 / 6] * 2, rtol=1e-6)
  # the transpose of the transpose is the call again: x * r, transposed c * 2r, twice: 3x
  g = lambda t: jax.linear_transpose(   # noqa: E731
      lambda x: linear_call(lambda r, v: v * r, lambda r, c: c * 2 * r, Y, x), X)(t)[0]
  np.testing.assert_allclose(jax.linear_transpose(g, X)(np.ones(2, np.float32))[0], [3, 3])


def test_pytrees_and_errors():
  out = linear_call(lambda r, l: {"a": l[0] * r["s"], "b": l[1]},
                    lambda r, c: (c["a"] * r["s"], c["b"]), {"s": 2.0}, (1.0, 3.0))
  assert float(out["a"]) == 2.0 and float(out["b"]) == 3.0

  def h(a, b):
    o = linear_call(lambda r, l: {"a": l[0] * r["s"], "b": l[1]},
                    lambda r, c: (c["a"] * r["s"] * 10, c["b"]), {"s": 2.0}, (a, b))
    return o["a"] + o["b"]
  assert jax.grad(h, argnums=(0, 1))(1.0, 3.0) == (20.0, 1.0)   # JAX 0.12.1
  with pytest.raises(TypeError, match="transpose output pytree structure must match"):
    jax.grad(lambda a: linear_call(lambda r, l: l, lambda r, c: (c, c), (), a))(1.0)
  with pytest.raises(ValueError, match="not differentiable with respect to its residual"):
    jax.grad(lambda y: f(X, y).sum())(Y)
