"""lax.ragged_dot / ragged_dot_general (against a NumPy float64 loop over the groups),
lax.custom_root (implicit derivatives against analytic values) and lax.composite; eager,
jit, grad and vmap, and the errors."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

_RNG = np.random.RandomState(0)
_LHS = _RNG.randn(7, 4).astype(np.float32)
_RHS = _RNG.randn(3, 4, 5).astype(np.float32)
_SIZES = np.array([2, 0, 4], np.int32)     # the 7th row belongs to no group: zeros


def _ragged_dot_loop(lhs, rhs, sizes):
  out, start = np.zeros((lhs.shape[0], rhs.shape[2])), 0
  for g, n in enumerate(sizes):
    out[start:start + n] = lhs[start:start + n].astype(np.float64) @ rhs[g]
    start += n
  return out


def test_ragged_dot_eager_jit_vmap_grad():
  want = _ragged_dot_loop(_LHS, _RHS, _SIZES)
  np.testing.assert_allclose(lax.ragged_dot(_LHS, _RHS, _SIZES), want, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(ember.jit(lax.ragged_dot)(_LHS, _RHS, _SIZES), want, rtol=1e-6,
                             atol=1e-6)
  batched = ember.vmap(lax.ragged_dot, in_axes=(0, None, None))(np.stack([_LHS, -_LHS]), _RHS,
                                                                _SIZES)
  np.testing.assert_allclose(batched, np.stack([want, -want]), rtol=1e-6, atol=1e-6)
  d_lhs, d_rhs = ember.grad(lambda l, r: lax.ragged_dot(l, r, _SIZES).sum(), (0, 1))(_LHS, _RHS)
  groups = np.repeat([0, 2], [2, 4])
  want_lhs = np.zeros_like(_LHS)
  want_lhs[:6] = _RHS[groups].sum(axis=2)
  np.testing.assert_allclose(d_lhs, want_lhs, rtol=1e-6)
  want_rhs = np.stack([np.broadcast_to(_LHS[s:e].sum(0)[:, None], (4, 5))
                       for s, e in ((0, 2), (2, 2), (2, 6))])
  np.testing.assert_allclose(d_rhs, want_rhs, rtol=1e-6, atol=1e-7)


def test_ragged_dot_general_contracting_and_batch_modes():
  a = _RNG.randn(3, 6).astype(np.float32)
  b = _RNG.randn(6, 2).astype(np.float32)
  sizes = np.array([1, 3, 2], np.int32)
  dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  want = np.stack([a[:, s:e].astype(np.float64) @ b[s:e] for s, e in ((0, 1), (1, 4), (4, 6))])
  np.testing.assert_allclose(lax.ragged_dot_general(a, b, sizes, dn), want, rtol=1e-6,
                             atol=1e-6)
  x, y = _RNG.randn(2, 3, 4).astype(np.float32), _RNG.randn(2, 4, 5).astype(np.float32)
  dn = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], [])
  np.testing.assert_allclose(lax.ragged_dot_general(x, y, np.array([1, 1], np.int32), dn),
                             x.astype(np.float64) @ y, rtol=1e-6, atol=1e-6)
  assert dn.dot_dimension_numbers == (((2,), (1,)), ((0,), (0,)))


def test_ragged_dot_errors():
  with pytest.raises(TypeError, match="expected group_sizes of rank 1"):
    lax.ragged_dot(_LHS, _RHS, _SIZES[None])
  with pytest.raises(TypeError, match="group_sizes must have an integer dtype"):
    lax.ragged_dot(_LHS, _RHS, _SIZES.astype(np.float32))
  with pytest.raises(TypeError, match="does not match the number of groups"):
    lax.ragged_dot(_LHS, _RHS, _SIZES[:2])
  with pytest.raises(NotImplementedError, match="group_offset"):
    lax.ragged_dot(_LHS, _RHS, _SIZES, group_offset=jnp.int32(0))


def _newton_sqrt(a, has_aux=False):
  f = lambda x: x * x - a

  def solve(f, x0):
    x = lax.fori_loop(0, 20, lambda i, x: x - f(x) / (2 * x), x0)
    return (x, f(x)) if has_aux else x
  return lax.custom_root(f, 1.0, solve, lambda g, y: y / g(1.0), has_aux=has_aux)


def test_custom_root_implicit_derivatives():
  np.testing.assert_allclose(_newton_sqrt(2.0), np.sqrt(2), rtol=1e-6)
  want = 1 / (2 * np.sqrt(2))
  np.testing.assert_allclose(ember.grad(_newton_sqrt)(2.0), want, rtol=1e-6)
  np.testing.assert_allclose(ember.jit(ember.grad(_newton_sqrt))(2.0), want, rtol=1e-6)
  np.testing.assert_allclose(ember.vmap(ember.grad(_newton_sqrt))(jnp.array([1., 4.])),
                             [0.5, 0.25], rtol=1e-6)
  np.testing.assert_allclose(ember.jvp(_newton_sqrt, (4.,), (1.,))[1], 0.25, rtol=1e-6)
  root, aux = _newton_sqrt(9.0, has_aux=True)
  assert float(root) == 3.0 and float(aux) == 0.0
  np.testing.assert_allclose(ember.grad(lambda a: _newton_sqrt(a, True)[0])(9.0), 1 / 6,
                             rtol=1e-6)
  A = np.array([[3., 1.], [1., 2.]], np.float32)

  def vec_root(b):   # A x = b: dx/db = inv(A)
    return lax.custom_root(lambda x: A @ x - b, jnp.zeros(2),
                           lambda f, x0: jnp.linalg.solve(A, b),
                           lambda g, y: jnp.linalg.solve(ember.jacobian(g)(y), y))
  np.testing.assert_allclose(ember.jacobian(vec_root)(jnp.array([1., 2.])), np.linalg.inv(A),
                             rtol=1e-6, atol=1e-7)
  with pytest.raises(TypeError, match="solve\\(\\) output pytree structure"):
    lax.custom_root(lambda x: x, 1.0, lambda f, x: (x, x), lambda g, y: y)


def test_composite():
  scale = lax.composite(lambda x, *, k: x * k + 1, "my.scale")
  np.testing.assert_array_equal(scale(jnp.arange(3.), k=2.), [1., 3., 5.])
  np.testing.assert_array_equal(ember.jit(lambda x: scale(x, k=3.))(jnp.arange(3.)),
                                [1., 4., 7.])
  np.testing.assert_array_equal(ember.vmap(lambda x: scale(x, k=3.))(jnp.arange(3.)),
                                [1., 4., 7.])
  with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
    ember.grad(lambda x: scale(x, k=3.))(1.0)
  with pytest.raises(ember.errors.UnexpectedTracerError, match="my.scale"):
    ember.jit(lambda x: scale(x, k=x))(1.0)


_A = np.array([[3., 1.], [1., 2.]], np.float32)
_B = np.array([1., 2.], np.float32)


def _cg(matvec, b):
  """A few conjugate-gradient steps in a while_loop (not reverse-differentiable itself)."""
  def body(state):
    x, r, p, i = state
    ap = matvec(p)
    alpha = (r @ r) / (p @ ap)
    x, r_new = x + alpha * p, r - alpha * ap
    p = r_new + (r_new @ r_new) / (r @ r) * p
    return x, r_new, p, i + 1
  x, *_ = lax.while_loop(lambda s: s[3] < 2, body, (jnp.zeros_like(b), b, b, 0))
  return x


def _solve(a, b, symmetric=True):
  return lax.custom_linear_solve(lambda x: a @ x, b, _cg, None if symmetric else _cg,
                                 symmetric=symmetric)


def test_custom_linear_solve_values_and_derivatives():
  inv = np.linalg.inv(_A.astype(np.float64))
  want = inv @ _B
  np.testing.assert_allclose(_solve(_A, _B), want, rtol=1e-6)
  np.testing.assert_allclose(ember.jit(_solve)(_A, _B), want, rtol=1e-6)
  # d x / d b = inv(A), through the while loop's solve in both modes
  np.testing.assert_allclose(ember.jacfwd(_solve, argnums=1)(_A, _B), inv, rtol=1e-5)
  np.testing.assert_allclose(ember.jacrev(_solve, argnums=1)(_A, _B), inv, rtol=1e-5)
  # d sum(x) / d A = -outer(inv(A)^T 1, x)
  np.testing.assert_allclose(ember.grad(lambda a: _solve(a, _B).sum())(_A),
                             -np.outer(inv.T @ np.ones(2), want), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ember.jit(ember.grad(lambda b: _solve(_A, b, False).sum()))(_B),
                             inv.T @ np.ones(2), rtol=1e-5)
  batched = ember.vmap(_solve, in_axes=(None, 0))(_A, np.stack([_B, 2 * _B]))
  np.testing.assert_allclose(batched, np.stack([want, 2 * want]), rtol=1e-6)
  assert "linear_solve[" in str(ember.make_jaxpr(_solve)(_A, _B))


def test_custom_linear_solve_aux_and_errors():
  def solve_aux(matvec, b):
    x = _cg(matvec, b)
    return x, {"residual": b - matvec(x)}
  x, aux = lax.custom_linear_solve(lambda x: _A @ x, _B, solve_aux, symmetric=True,
                                   has_aux=True)
  np.testing.assert_allclose(x, np.linalg.solve(_A, _B), rtol=1e-6)
  np.testing.assert_allclose(aux["residual"], [0., 0.], atol=1e-6)
  no_transpose = lambda b: lax.custom_linear_solve(lambda x: _A @ x, b, _cg)
  np.testing.assert_allclose(ember.jacfwd(no_transpose)(_B), np.linalg.inv(_A), rtol=1e-5)
  with pytest.raises(TypeError, match="transpose_solve required"):
    ember.grad(lambda b: no_transpose(b).sum())(_B)
  with pytest.raises(TypeError, match="solve\\(\\) output pytree structure must match b"):
    lax.custom_linear_solve(lambda x: _A @ x, _B, lambda mv, b: (b, b))
