"""Regressions of issue 15 ("never a wrong answer") in autodiff and lax typing: scatter
max/min gradients at NaN/inf/ties, cumulative-reduction gradients, grad through while
loops that pass the differentiated carry through, loop result weak types, and lax binary
ops with mismatched dtypes.

Every expected value is a literal printed by JAX 0.12 (the oracle) or computed with NumPy;
each case runs eagerly and under jit.
"""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

nan, inf = np.nan, np.inf
MODES = ["eager", "jit"]


def _maybe_jit(fn, mode):
  return ember.jit(fn) if mode == "jit" else fn


def _close(got, want, rtol=1e-6):
  np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float32), rtol=rtol,
                             atol=1e-6)


# --- 1. scatter max/min gradients ------------------------------------------------------------
# x, the .at[] index, the update; then JAX's (grad x, grad update) of
# sum(x.at[i].max(u) * [1..5]) and the same for .min.

_X = np.array([0., 0., 1., 3., 2.], np.float32)
SCATTER_CASES = {
    "nan_elsewhere": (np.array([nan, 0., .5, nan, 2.], np.float32), 2, 1.,
                      ([1, 2, 0, 4, 5], 3), ([1, 2, 3, 4, 5], 0)),
    "nan_at_index": (np.array([nan, 0., nan, nan, 2.], np.float32), 2, 1.,
                     ([1, 2, 0, 4, 5], 0), ([1, 2, 0, 4, 5], 0)),
    "inf_at_index": (np.array([0., 0., inf, -inf, 2.], np.float32), 2, 1.,
                     ([1, 2, 3, 4, 5], 0), ([1, 2, 0, 4, 5], 3)),
    "neg_inf_at_index": (np.array([0., 0., -inf, inf, 2.], np.float32), 2, 1.,
                         ([1, 2, 0, 4, 5], 3), ([1, 2, 3, 4, 5], 0)),
    "tie": (_X, 2, 1., ([1, 2, 1.5, 4, 5], 1.5), ([1, 2, 1.5, 4, 5], 1.5)),
    "nan_update": (_X, 2, nan, ([1, 2, 0, 4, 5], 0), ([1, 2, 0, 4, 5], 0)),
    "inf_update": (_X, 2, inf, ([1, 2, 0, 4, 5], 3), ([1, 2, 3, 4, 5], 0)),
    "repeated": (_X, np.array([2, 2, 4]), np.array([1., 1., 5.], np.float32),
                 ([1, 2, 1, 4, 0], [1, 1, 5]), ([1, 2, 1, 4, 5], [1, 1, 0])),
    "repeated_three_way_tie": (_X, np.array([2, 2, 0]), np.array([1., 1., -1.], np.float32),
                               ([1, 2, 1, 4, 5], [1, 1, 0]), ([0, 2, 1, 4, 5], [1, 1, 1])),
    "out_of_bounds_dropped": (_X, np.array([2, 7]), np.array([4., 1.], np.float32),
                              ([1, 2, 0, 4, 5], [3, 0]), ([1, 2, 3, 4, 5], [0, 0])),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("case", list(SCATTER_CASES))
def test_scatter_extremal_grad_matches_jax(case, op, mode):
  x, idx, u, want_max, want_min = SCATTER_CASES[case]
  want_x, want_u = want_max if op == "max" else want_min

  def f(x, u):
    return jnp.sum(getattr(x.at[idx], op)(u) * jnp.arange(1., 6.))
  gx, gu = _maybe_jit(ember.grad(f, argnums=(0, 1)), mode)(x, jnp.asarray(u, jnp.float32))
  _close(gx, want_x)
  _close(gu, want_u)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,want_gx,want_gu,want_jvp", [
    ("max", [[1, 2, 3, 4], [5, 0, 7, 0], [9, 10, 5.5, 12]], [0, 0, 5.5, 0], 495.),
    ("min", [[1, 2, 0, 4], [0, 0, 0, 0], [9, 10, 5.5, 12]], [8, 0, 12.5, 0], 427.),
])
def test_scatter_extremal_windows_grad_and_jvp(op, want_gx, want_gu, want_jvp, mode):
  """Row and column windows over NaN, -inf and ties; forward mode agrees with reverse."""
  x = np.array([[nan, 1., 2., 3.], [4., nan, 6., -inf], [1., 1., 1., 1.]], np.float32)
  u = np.array([0., 5., 1., nan], np.float32)
  w = np.arange(12, dtype=np.float32).reshape(3, 4) + 1

  def f(x, u):
    y = getattr(x.at[1], op)(u)
    return jnp.sum(getattr(y.at[:, 2], op)(u[:3]) * w)
  gx, gu = _maybe_jit(ember.grad(f, argnums=(0, 1)), mode)(x, u)
  _close(gx, want_gx)
  _close(gu, want_gu)
  jvp = _maybe_jit(lambda x, u: ember.jvp(f, (x, u), (w, np.ones(4, np.float32)))[1], mode)
  _close(jvp(x, u), want_jvp)
