"""jax.custom_batching: custom_vmap (a function with its own vmap rule) and sequential_vmap,
eager, under jit, vmap, nested vmap and jvp, against what JAX 0.12.1 gives."""
import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import custom_batching as cb

XS = np.arange(3.0, dtype=np.float32)
YS = np.arange(1.0, 4.0, dtype=np.float32)


def make_f(seen):
  @cb.custom_vmap
  def f(x, y):
    return jnp.sin(x) + y

  @f.def_vmap
  def rule(axis_size, in_batched, xs, ys):
    seen.append((axis_size, in_batched))
    return jnp.cos(xs) * ys, True
  return f


def test_outside_vmap_the_function_itself():
  f = make_f([])
  np.testing.assert_allclose(f(1.0, 2.0), 2.841471, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(f)(1.0, 2.0), 2.841471, rtol=1e-6)
  assert "custom_vmap_call[" in str(jax.make_jaxpr(f)(1.0, 2.0))


def test_vmap_uses_the_rule():
  seen = []
  f = make_f(seen)
  want = np.cos(XS) * YS    # JAX 0.12.1: [1., 1.0806046, -1.2484405]
  np.testing.assert_allclose(jax.vmap(f)(XS, YS), want, rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(f, (0, None))(XS, 2.0), np.cos(XS) * 2, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.vmap(f))(XS, YS), want, rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jax.jit(f))(XS, YS), want, rtol=1e-6)
  assert seen == [(3, [True, True]), (3, [True, False]), (3, [True, True]), (3, [True, True])]
  np.testing.assert_allclose(jax.vmap(jax.vmap(f))(np.ones((2, 3)), np.ones((2, 3))),
                             np.full((2, 3), np.cos(1.0)), rtol=1e-6)


def test_jvp_and_vmap_of_jvp():
  seen = []
  f = make_f(seen)
  p, t = jax.jvp(f, (1.0, 2.0), (1.0, 1.0))
  np.testing.assert_allclose((p, t), (2.841471, 1.5403023), rtol=1e-6)
  # JAX 0.12.1: the rule sees what is batched in both a primal and its tangent
  p, t = jax.vmap(lambda x, y: jax.jvp(f, (x, y), (1.0, 1.0)))(XS, YS)
  np.testing.assert_allclose(p, np.cos(XS) * YS, rtol=1e-6)
  np.testing.assert_allclose(t, [1.0, -1.1426396, -3.1440392], rtol=1e-6)
  assert seen[-1] == (3, [False, False])
  for fn in (jax.vmap, lambda g: jax.jit(jax.vmap(g))):
    p, t = fn(lambda x, dx: jax.jvp(f, (x, 2.0), (dx, 0.0)))(XS, YS)
    np.testing.assert_allclose(p, [2.0, 1.0806046, -0.8322937], rtol=1e-6)
    np.testing.assert_allclose(t, [0.0, -3.3658838, -5.4557843], rtol=1e-6)
    assert seen[-1] == (3, [True, False])


def test_reverse_mode_through_custom_vjp():
  f = make_f([])
  with pytest.raises(ValueError, match="reverse-mode"):
    jax.grad(f)(1.0, 2.0)

  @jax.custom_vjp
  @cb.custom_vmap
  def g(x, y):
    return jnp.sin(x) * y
  g.def_vmap(lambda n, b, xs, ys: (jnp.cos(xs) * ys, True))
  g.defvjp(lambda x, y: (g(x, y), (jnp.cos(x), jnp.sin(x), y)),
           lambda res, ct: (res[0] * ct * res[2], res[1] * ct))
  np.testing.assert_allclose(jax.vmap(g)(jnp.zeros(3), jnp.ones(3)), [1.0, 1.0, 1.0])
  np.testing.assert_allclose(jax.grad(g)(0.0, 1.0), 1.0)


def test_rule_errors():
  with pytest.raises(AttributeError, match="No batching rule defined"):
    cb.custom_vmap(lambda x: x)(1.0)
  h = cb.custom_vmap(lambda x: x)
  h.def_vmap(lambda n, b, x: ((x, x), True))
  with pytest.raises(ValueError, match="output batching specification .* do not match"):
    jax.vmap(h)(XS)
  h.def_vmap(lambda n, b, x: ((x, x), (True, True)))
  with pytest.raises(ValueError, match="does not match that of original"):
    jax.vmap(h)(XS)


def test_sequential_vmap():
  calls = []

  @cb.sequential_vmap
  def g(x, d):
    calls.append(np.shape(x))
    return x * d["a"] + d["b"]
  # JAX 0.12.1: [1., 3., 7.] and [1., 4., 7.]
  np.testing.assert_allclose(jax.vmap(g, (0, {"a": 0, "b": None}))(XS, {"a": YS, "b": 1.0}),
                             [1.0, 3.0, 7.0])
  np.testing.assert_allclose(jax.vmap(g, (0, {"a": None, "b": 0}))(XS, {"a": 2.0, "b": YS}),
                             [1.0, 4.0, 7.0])
  assert all(s == () for s in calls)    # the function saw one example at a time
  jaxpr = str(jax.make_jaxpr(jax.vmap(g))(XS, {"a": YS, "b": np.ones(3, np.float32)}))
  assert "scan[" in jaxpr and "custom_vmap_call[" in jaxpr
  np.testing.assert_allclose(
      jax.jit(jax.vmap(g))(XS, {"a": YS, "b": np.ones(3, np.float32)}), [1.0, 3.0, 7.0])
  assert g(2.0, {"a": 3.0, "b": 1.0}) == 7.0
