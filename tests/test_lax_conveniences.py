"""jax.lax's small conveniences (broadcast_like, empty, index_take, shape_as_value, stage,
dce_sink, platform_dependent, RandomAlgorithm) and approx_max_k/approx_min_k (exact on the
CPU, as JAX's), against the values jax 0.12.1 produced; eager, jit, grad and vmap."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax


def test_broadcast_like_empty_shape_as_value():
  np.testing.assert_array_equal(lax.broadcast_like(jnp.arange(3), jnp.zeros((2, 3))),
                                [[0, 1, 2], [0, 1, 2]])
  out = lax.empty((2, 3), jnp.float32)
  assert out.shape == (2, 3) and out.dtype == np.float32
  assert ember.jit(lambda: lax.empty(3, jnp.int32))().shape == (3,)
  np.testing.assert_array_equal(lax.shape_as_value((2, 3)), np.array([2, 3], np.int32))
  assert lax.shape_as_value(()).shape == (0,)


def test_index_take():
  src = jnp.arange(12).reshape(3, 4)
  idx = (jnp.array([0, 2]), jnp.array([1, 3]))
  np.testing.assert_array_equal(lax.index_take(src, idx, (0, 1)), [1, 11])       # as JAX
  np.testing.assert_array_equal(ember.jit(lambda s: lax.index_take(s, idx, (0, 1)))(src),
                                [1, 11])
  cube = jnp.arange(24).reshape(2, 3, 4)
  want = [[[8, 9, 10, 11], [20, 21, 22, 23]]] * 2       # JAX: index -1 wraps to 2
  np.testing.assert_array_equal(lax.index_take(cube, (jnp.array([-1, 2]),), (1,)), want)


def test_stage_dce_sink_platform_dependent():
  out = lax.stage(3.0)
  assert float(out) == 3.0 and out.weak_type
  assert str(ember.make_jaxpr(lax.stage)(2.0)) == "{ lambda ; a:f32[]. let  in (a,) }"
  assert lax.dce_sink({"a": jnp.ones(2)}) is None
  branches = dict(cpu=lambda x: x + 1, default=lambda x: x - 1)
  assert lax.platform_dependent(1.0, **branches) == 2.0
  assert ember.jit(lambda x: lax.platform_dependent(x, **branches))(1.0) == 2.0
  assert lax.platform_dependent(1.0, tpu=lambda x: x + 1, default=lambda x: x - 1) == 0.0
  with pytest.raises(ValueError, match="Unsupported platform cpu"):
    lax.platform_dependent(1.0, tpu=lambda x: x + 1)
  assert [a.value for a in lax.RandomAlgorithm] == [0, 1, 2]
  assert lax.RandomAlgorithm.RNG_PHILOX.name == "RNG_PHILOX"


def test_approx_max_min_k():
  x = jnp.array([3., 1, 4, 1, 5, 9, 2, 6])
  for f in (lambda x: lax.approx_max_k(x, 3), ember.jit(lambda x: lax.approx_max_k(x, 3))):
    v, i = f(x)
    np.testing.assert_array_equal(v, [9., 6., 5.])
    np.testing.assert_array_equal(i, [5, 7, 4])
  for f in (lambda x: lax.approx_min_k(x, 3, recall_target=0.5),
            ember.jit(lambda x: lax.approx_min_k(x, 3))):
    v, i = f(x)
    np.testing.assert_array_equal(v, [1., 1., 2.])
    np.testing.assert_array_equal(i, [1, 3, 6])             # stable, as JAX
  m = jnp.arange(12.).reshape(3, 4)[::-1]
  v, i = lax.approx_min_k(m, 2, reduction_dimension=0)
  np.testing.assert_array_equal(v, [[0., 1., 2., 3.], [4., 5., 6., 7.]])
  np.testing.assert_array_equal(i, [[2] * 4, [1] * 4])
  v, i = ember.vmap(lambda r: lax.approx_max_k(r, 2))(m)
  np.testing.assert_array_equal(v, [[11., 10.], [7., 6.], [3., 2.]])
  np.testing.assert_array_equal(i, [[3, 2]] * 3)
  g = ember.grad(lambda x: lax.approx_min_k(x, 3)[0].sum() * 2)(x)
  np.testing.assert_array_equal(g, [0., 2., 0., 2., 0., 0., 2., 0.])
  with pytest.raises(ValueError, match="k must be positive"):
    lax.approx_max_k(x, 9)
  with pytest.raises(ValueError, match="recall_target"):
    lax.approx_max_k(x, 2, recall_target=1.5)


def test_copy_and_stage_primitives():
  x = np.ones(3, np.float32)
  out = lax.copy_p.bind(x)
  np.testing.assert_array_equal(out, x)
  np.testing.assert_array_equal(ember.jit(lax.copy_p.bind)(x), x)
  np.testing.assert_array_equal(ember.vmap(lax.copy_p.bind)(x), x)
  assert ember.grad(lambda v: lax.copy_p.bind(v) * 2.0)(1.0) == 2.0
  assert ember.grad(lambda v: lax.stage_p.bind(v) * 3.0)(1.0) == 3.0
  assert str(ember.make_jaxpr(lambda: lax.stage(np.ones(2, np.float32)))()) == (
      "{ lambda a:f32[2]; . let b:f32[2] = stage a in (b,) }")
