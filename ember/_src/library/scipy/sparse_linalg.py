"""jax.scipy.sparse.linalg: the Krylov solvers cg, bicgstab and gmres (restarted, 'batched'
or 'incremental'), on a matrix or a linear function and on pytrees of arrays, as in JAX 0.12.

Each solve is a lax.while_loop. Differentiation follows JAX's custom_linear_solve: the
solution x of A x = b is differentiated implicitly rather than through the iterations,
b's cotangent is the solve of A^T with x's cotangent (the same solver; cg uses A itself, A
being symmetric), and the arrays A's function closes over get minus that solution contracted
with dA x (closure_convert finds them). That rule is a custom_vjp here, so reverse mode
(grad, vjp) works and forward mode (jvp, jacfwd) through a solve does not. x0 and the
preconditioner M get no cotangent, as in JAX. `info` is None for cg/bicgstab and 0 / -1
(NaN) for gmres, as JAX returns."""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from ember._src.base import tree_util
from ember._src.core.array import Array
from ember._src.library.lax import api as lax
from ember._src.library.scipy import _jnp as jnp
from ember._src.library.scipy.linalg import solve as _dense_solve
from ember._src.library.scipy.linalg import solve_triangular
from ember._src.transforms.ad import linear_transpose, vjp
from ember._src.transforms.custom_derivatives import closure_convert, custom_vjp

__all__ = ["cg", "gmres", "bicgstab"]

_HIGHEST = "highest"
_map = tree_util.tree_map
_leaves = tree_util.tree_leaves


def _dot(a, b):
  return jnp.dot(a, b, precision=_HIGHEST)


def _vdot_real(x, y):
  out = jnp.vdot(jnp.real(x), jnp.real(y), precision=_HIGHEST)
  if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
    out = out + jnp.vdot(jnp.imag(x), jnp.imag(y), precision=_HIGHEST)
  return out


def _vdot_real_tree(x, y):
  return sum(_leaves(_map(_vdot_real, x, y)))


def _vdot_tree(x, y):
  return sum(_leaves(_map(partial(jnp.vdot, precision=_HIGHEST), x, y)))


def _norm(x):
  xs = _leaves(x)
  return jnp.sqrt(sum(map(_vdot_real, xs, xs)))


def _scale(c, tree):
  return _map(lambda x: c * x, tree)


def _add(a, b):
  return _map(operator.add, a, b)


def _sub(a, b):
  return _map(operator.sub, a, b)


def _identity(x):
  return x


def _as_matvec(f, what="linear operator"):
  """A function v -> A v from a function, a square matrix or an object with __matmul__."""
  if callable(f):
    return f
  if isinstance(f, (np.ndarray, Array)):
    if f.ndim != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"{what} must be a square matrix, but has shape: {f.shape}")
    return partial(_dot, f)
  if hasattr(f, "__matmul__"):
    if hasattr(f, "shape") and (len(f.shape) != 2 or f.shape[0] != f.shape[1]):
      raise ValueError(f"{what} must be a square matrix, but has shape: {f.shape}")
    return partial(operator.matmul, f)
  raise TypeError(f"{what} must be either a function or ndarray: {f}")


def _result_dtype(tree):
  return jnp.result_type(*_leaves(tree))


# ---------------------------------------------------------------------------------------------
# Implicit differentiation of a linear solve (JAX's custom_linear_solve rule)


def _linear_solve(matvec, b, x0, solve, transpose_solve, symmetric: bool):
  """x = solve(matvec, b, x0), differentiated as the solution of matvec(x) = b."""
  mv, consts = closure_convert(matvec, b)

  def apply(cs):
    return lambda v: mv(v, *cs)

  @custom_vjp
  def run(cs, b, x0):
    return solve(apply(cs), b, x0)

  def fwd(cs, b, x0):
    x = solve(apply(cs), b, x0)
    return x, (cs, x, x0)

  def bwd(res, x_bar):
    cs, x, x0 = res
    a = apply(cs)
    if symmetric:
      a_t = a
    else:
      transpose = linear_transpose(a, x)
      a_t = lambda v: transpose(v)[0]  # noqa: E731
    lam = transpose_solve(a_t, x_bar, _map(jnp.zeros_like, x0))
    _, pullback = vjp(lambda c: mv(x, *c), cs)
    (cs_bar,) = pullback(lam)
    return _map(operator.neg, cs_bar), lam, _map(jnp.zeros_like, x0)

  run.defvjp(fwd, bwd)
  return run(consts, b, x0)


# ---------------------------------------------------------------------------------------------
# Conjugate gradients and BiCGSTAB


def _cg_loop(A, b, x0, *, maxiter, tol, atol, M):
  bs = _vdot_real_tree(b, b)
  atol2 = jnp.maximum(tol ** 2 * bs, jnp.asarray(atol, bs.dtype) ** 2)
  dtype = _result_dtype(b)
  preconditioned = M is not _identity

  def cond(state):
    _, r, gamma, _, k = state
    rs = _vdot_real_tree(r, r) if preconditioned else jnp.real(gamma)
    return (rs > atol2) & (jnp.real(gamma) > 0) & (k < maxiter)

  def body(state):
    x, r, gamma, p, k = state
    ap = A(p)
    pap = _vdot_real_tree(p, ap).astype(dtype)
    alpha = jnp.where(jnp.real(pap) > 0, gamma / pap, 0)
    x = _add(x, _scale(alpha, p))
    r = _sub(r, _scale(alpha, ap))
    z = M(r)
    gamma_new = jnp.where(jnp.real(pap) > 0, _vdot_real_tree(r, z).astype(dtype), 0)
    p = _add(z, _scale(gamma_new / gamma, p))
    return x, r, gamma_new, p, k + 1

  r0 = _sub(b, A(x0))
  z0 = M(r0)
  gamma0 = _vdot_real_tree(r0, z0).astype(dtype)
  return lax.while_loop(cond, body, (x0, r0, gamma0, z0, 0))[0]


def _bicgstab_loop(A, b, x0, *, maxiter, tol, atol, M):
  bs = _vdot_real_tree(b, b)
  atol2 = jnp.maximum(tol ** 2 * bs, jnp.asarray(atol, bs.dtype) ** 2)

  def cond(state):
    r, k = state[1], state[-1]
    return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body(state):
    x, r, rhat, alpha, omega, rho, p, q, k = state
    rho_new = _vdot_tree(rhat, r)
    beta = rho_new / rho * alpha / omega
    p = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
    phat = M(p)
    q = A(phat)
    alpha = rho_new / _vdot_tree(rhat, q)
    s = _sub(r, _scale(alpha, q))
    done = _vdot_real_tree(s, s) < atol2   # s already small: skip the stabilizing half-step
    shat = M(s)
    t = A(shat)
    omega = _vdot_tree(t, s) / _vdot_tree(t, t)
    x = _map(partial(jnp.where, done), _add(x, _scale(alpha, phat)),
             _add(x, _add(_scale(alpha, phat), _scale(omega, shat))))
    r = _map(partial(jnp.where, done), s, _sub(s, _scale(omega, t)))
    k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)   # breakdown codes, as SciPy
    k = jnp.where(rho_new == 0, -10, k)
    return x, r, rhat, alpha, omega, rho_new, p, q, k

  r0 = _sub(b, A(x0))
  one = jnp.ones((), _result_dtype(b))
  return lax.while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _check_x0(b, x0):
  if x0 is None:
    return _map(jnp.zeros_like, b)
  if tree_util.tree_structure(x0) != tree_util.tree_structure(b):
    raise ValueError("x0 and b must have matching tree structure: "
                     f"{tree_util.tree_structure(x0)} vs {tree_util.tree_structure(b)}")
  shapes = [np.shape(v) for v in _leaves(x0)], [np.shape(v) for v in _leaves(b)]
  if shapes[0] != shapes[1]:
    raise ValueError(f"arrays in x0 and b must have matching shapes: {shapes[0]} vs "
                     f"{shapes[1]}")
  return x0


def _isolve(loop, A, b, x0, tol, atol, maxiter, M, symmetric):
  b = _map(jnp.asarray, b)
  x0 = _map(jnp.asarray, _check_x0(b, x0))
  if maxiter is None:
    maxiter = 10 * sum(np.size(v) for v in _leaves(b))   # SciPy's default
  A = _as_matvec(A)
  M = _identity if M is None else _as_matvec(M, "preconditioner M")
  solve = lambda a, rhs, guess: loop(a, rhs, guess, maxiter=maxiter, tol=tol,  # noqa: E731
                                     atol=atol, M=M)
  symmetric = symmetric and not any(jnp.iscomplexobj(v) for v in _leaves(b))
  return _linear_solve(A, b, x0, solve, solve, symmetric), None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Conjugate gradients for A x = b with A Hermitian positive definite (a matrix or a
  function on b's pytree); stops when |r| <= max(tol |b|, atol) or after maxiter steps.
  Returns (x, None)."""
  return _isolve(_cg_loop, A, b, x0, tol, atol, maxiter, M, symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Stabilized bi-conjugate gradients for a general A x = b. Returns (x, None)."""
  return _isolve(_bicgstab_loop, A, b, x0, tol, atol, maxiter, M, symmetric=False)


# ---------------------------------------------------------------------------------------------
# GMRES


def _safe_normalize(x, thresh=None):
  """(x / |x|, |x|), or zeros and 0 when |x| <= thresh (default: machine epsilon)."""
  norm = _norm(x)
  dtype = _result_dtype(x)
  if thresh is None:
    thresh = jnp.finfo(norm.dtype).eps
  use = norm > jnp.real(jnp.asarray(thresh).astype(dtype))
  unit = _map(lambda y: jnp.where(use, y / norm.astype(dtype), 0.0), x)
  return unit, jnp.where(use, norm, 0.0)


def _project(V, v):
  """V^H v summed over the pytree: the coefficients of v along V's columns."""
  parts = _map(lambda X, y: jnp.einsum("...n,...->n", jnp.conj(X), y, precision=_HIGHEST),
               V, v)
  return tree_util.tree_reduce(operator.add, parts)


def _gram_schmidt(V, x):
  """x orthogonalized against V's columns, by classical Gram-Schmidt done twice (the second
  pass removes what rounding left), and the coefficients."""
  h = jnp.zeros_like(_leaves(V)[0][..., 0], shape=(_leaves(V)[0].shape[-1],))
  q = x
  for _ in range(2):
    c = _project(V, q)
    q = _sub(q, _map(lambda X: _dot(X, c), V))
    h = h + c
  return q, h


def _arnoldi_step(k, A, M, V, H):
  """Extend the Krylov basis V by M A V[:, k]; row k of H gets its coefficients."""
  dtype = _result_dtype(V)
  eps = jnp.finfo(dtype).eps
  v = M(A(_map(lambda X: X[..., k], V)))
  _, norm0 = _safe_normalize(v)
  v, h = _gram_schmidt(V, v)
  unit, norm1 = _safe_normalize(v, thresh=eps * norm0)
  V = _map(lambda X, y: X.at[..., k + 1].set(y), V, unit)
  h = h.at[k + 1].set(norm1.astype(dtype))
  return V, H.at[k, :].set(h), norm1 == 0


def _rotate(H, i, cs, sn):
  x1, y1 = H[i], H[i + 1]
  H = H.at[i].set(jnp.conj(cs) * x1 - jnp.conj(sn) * y1)
  return H.at[i + 1].set(sn * x1 + cs * y1)


def _givens(a, b):
  b_zero = jnp.abs(b) == 0
  a_small = jnp.abs(a) < jnp.abs(b)
  t = -jnp.where(a_small, a, b) / jnp.where(a_small, b, a)
  r = lax.rsqrt(1 + jnp.abs(t) ** 2).astype(t.dtype)
  cs = jnp.where(b_zero, 1, jnp.where(a_small, r * t, r))
  sn = jnp.where(b_zero, 0, jnp.where(a_small, r, r * t))
  return cs, sn


def _basis(unit_residual, restart: int):
  return _map(lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
              unit_residual)


def _finish_cycle(A, b, x0, V, y, M):
  x = _add(x0, _map(lambda X: _dot(X[..., :-1], y), V))
  unit, norm = _safe_normalize(M(_sub(b, A(x))))
  return x, unit, norm


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
  """One restart cycle, with the least-squares problem kept triangular by Givens rotations
  (it stops as soon as the estimated residual is below ptol)."""
  V = _basis(unit_residual, restart)
  dtype = _result_dtype(b)
  R = jnp.eye(restart, restart + 1, dtype=dtype)
  givens = jnp.zeros((restart, 2), dtype)
  beta = jnp.zeros((restart + 1,), dtype).at[0].set(residual_norm.astype(dtype))

  def cond(state):
    return (state[0] < restart) & (state[1] > ptol)

  def body(state):
    k, _, V, R, beta, givens = state
    V, H, _ = _arnoldi_step(k, A, M, V, R)
    row = lax.fori_loop(0, k, lambda i, row: _rotate(row, i, givens[i, 0], givens[i, 1]),
                        H[k, :])
    cs, sn = _givens(row[k], row[k + 1])
    givens = givens.at[k, :].set(jnp.stack([cs, sn]))
    R = R.at[k, :].set(_rotate(row, k, cs, sn))
    beta = _rotate(beta, k, cs, sn)
    return k + 1, jnp.abs(beta[k + 1]), V, R, beta, givens

  _, _, V, R, beta, _ = lax.while_loop(cond, body, (0, residual_norm, V, R, beta, givens))
  y = solve_triangular(R[:, :-1].T, beta[:-1])
  return _finish_cycle(A, b, x0, V, y, M)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
  """One restart cycle: the whole Arnoldi basis, then the least-squares problem by its
  normal equations."""
  del ptol
  V = _basis(unit_residual, restart)
  dtype = _result_dtype(b)
  H = jnp.eye(restart, restart + 1, dtype=dtype)

  def cond(state):
    return (state[3] < restart) & ~state[2]

  def body(state):
    V, H, _, k = state
    V, H, breakdown = _arnoldi_step(k, A, M, V, H)
    return V, H, breakdown, k + 1

  V, H, _, _ = lax.while_loop(cond, body, (V, H, jnp.asarray(False), 0))
  beta = jnp.zeros((restart + 1,), dtype).at[0].set(residual_norm.astype(dtype))
  a = H.T
  y = _dense_solve(_dot(jnp.conj(a.T), a), _dot(jnp.conj(a.T), beta), assume_a="pos")
  return _finish_cycle(A, b, x0, V, y, M)


def _gmres_loop(A, b, x0, atol, ptol, restart, maxiter, M, cycle):
  unit, norm = _safe_normalize(M(_sub(b, A(x0))))

  def cond(state):
    return (state[1] < maxiter) & (state[3] > atol)

  def body(state):
    x, k, unit, norm = state
    x, unit, norm = cycle(A, b, x, unit, norm, ptol, restart, M)
    return x, k + 1, unit, norm

  return lax.while_loop(cond, body, (x0, 0, unit, norm))[0]


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
  """Restarted GMRES for a general A x = b: `restart` Krylov vectors per cycle, at most
  `maxiter` cycles; solve_method 'batched' (whole basis, then least squares) or
  'incremental' (Givens rotations, early exit). Returns (x, info), info -1 for NaN."""
  if solve_method == "incremental":
    cycle = _gmres_incremental
  elif solve_method == "batched":
    cycle = _gmres_batched
  else:
    raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' or "
                     "'batched'")
  b = _map(jnp.asarray, b)
  x0 = _map(jnp.asarray, _check_x0(b, x0))
  A = _as_matvec(A)
  M = _identity if M is None else _as_matvec(M, "preconditioner M")
  size = sum(np.size(v) for v in _leaves(b))
  if maxiter is None:
    maxiter = 10 * size   # SciPy's default
  restart = min(restart, size)
  b_norm = lax.stop_gradient(_norm(b))   # tolerances carry no derivative
  atol = jnp.maximum(tol * b_norm, atol)
  ptol = lax.stop_gradient(_norm(M(b))) * jnp.minimum(1.0, atol / b_norm)

  def solve(a, rhs, guess):
    return _gmres_loop(a, rhs, guess, atol, ptol, restart, maxiter, M, cycle)

  x = _linear_solve(A, b, x0, solve, solve, symmetric=False)
  info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
  return x, info


