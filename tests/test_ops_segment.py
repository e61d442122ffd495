"""jax.ops: segment_sum / segment_prod / segment_max / segment_min against JAX 0.12.1's
values (empty segments hold the identity; ids out of range are dropped), eager, jit, grad,
vmap, bucketed."""
import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import errors, ops

D = np.arange(6.0, dtype=np.float32)
IDS = np.array([0, 0, 1, 2, 2, 5], np.int32)
INF = np.inf
# JAX 0.12.1: f(D, IDS), f(D, IDS, 3), f(D, IDS, 4, bucket_size=2); f(arange(6).reshape(3, 2),
# [1, 1, 0], 3) in int32
CASES = {
    "segment_sum": ([1, 2, 7, 0, 0, 5], [1, 2, 7], [1, 2, 7, 0], [[4, 5], [2, 4], [0, 0]]),
    "segment_prod": ([0, 2, 12, 1, 1, 5], [0, 2, 12], [0, 2, 12, 1], [[4, 5], [0, 3], [1, 1]]),
    "segment_max": ([1, 2, 4, -INF, -INF, 5], [1, 2, 4], [1, 2, 4, -INF],
                    [[4, 5], [2, 3], [-2**31, -2**31]]),
    "segment_min": ([0, 2, 3, INF, INF, 5], [0, 2, 3], [0, 2, 3, INF],
                    [[4, 5], [0, 1], [2**31 - 1, 2**31 - 1]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_segment_reductions(name):
  f = getattr(ops, name)
  full, three, bucketed, ints = CASES[name]
  np.testing.assert_array_equal(f(D, IDS), np.float32(full))
  np.testing.assert_array_equal(f(D, IDS, num_segments=3), np.float32(three))
  np.testing.assert_array_equal(f(D, IDS, 4, bucket_size=2), np.float32(bucketed))
  np.testing.assert_array_equal(jax.jit(f, static_argnums=2)(D, IDS, 4), np.float32(bucketed))
  out = f(np.arange(6, dtype=np.int32).reshape(3, 2), np.array([1, 1, 0]), 3)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, ints)


def test_segment_transforms_and_modes():
  np.testing.assert_array_equal(jax.grad(lambda d: ops.segment_sum(d, IDS, 3).sum())(D),
                                [1, 1, 1, 1, 1, 0])
  np.testing.assert_array_equal(jax.grad(lambda d: ops.segment_max(d, IDS, 3).sum())(D),
                                [0, 1, 1, 0, 1, 0])
  np.testing.assert_array_equal(
      jax.vmap(lambda d: ops.segment_sum(d, IDS, 3))(np.ones((2, 6), np.float32)),
      [[2, 1, 2], [2, 1, 2]])
  np.testing.assert_array_equal(ops.segment_sum(D, IDS, 3, mode="clip"), [1, 2, 12])
  np.testing.assert_array_equal(ops.segment_sum(D, IDS, 3, indices_are_sorted=True), [1, 2, 7])


def test_segment_errors():
  with pytest.raises(TypeError, match="add does not accept dtype bool"):
    ops.segment_sum(jnp.array([True, False]), jnp.array([0, 0]), 2)
  with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
    ops.segment_sum([1.0, 2.0], IDS)
  with pytest.raises(ValueError, match="num_segments must be non-negative"):
    ops.segment_sum(D, IDS, -1)
  with pytest.raises(errors.ConcretizationTypeError):
    jax.jit(lambda i: ops.segment_sum(D, i))(IDS)
