"""`check_grads` (jax.test_util): a function's jvp and vjp checked against central finite
differences, to any order.

The checks follow JAX 0.12's step for step, so a test that passes on JAX passes here on the
same numbers: directions drawn with `np.random.RandomState(0).randn` (one fresh generator
per check; a vjp check draws the input direction first, then the output cotangent), finite
differences and inner products computed in each leaf's own dtype, and tolerances looked up
per leaf dtype and scaled by the leaf's size."""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes, tree_util
from ember._src.transforms import ad

__all__ = ["check_grads", "check_jvp", "check_vjp"]

# JAX's default tolerances for gradient checks, by dtype
_GRAD_TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(dtypes.bfloat16): 1e-1,
                   np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
                   np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5}
# ... and for a dtype a tolerance dict leaves out (JAX's test_util.default_tolerance)
_TIGHT_TOLERANCE = {np.dtype(dtypes.bfloat16): 1e-2, np.dtype(np.float16): 1e-3,
                    np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
                    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15}
_EPS = 1e-4


def _is_py_scalar(x) -> bool:
  return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _dtype(x) -> np.dtype:
  return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _with_defaults(tol):
  """A tolerance as given (a number) or a per-dtype dict over the gradient defaults."""
  if tol is None:
    return dict(_GRAD_TOLERANCE)
  if isinstance(tol, dict):
    return {**_GRAD_TOLERANCE, **{np.dtype(k): v for k, v in tol.items()}}
  return tol


def _tol_for(dtype, tol) -> float:
  if not isinstance(tol, dict):
    return tol
  dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
  return tol.get(dtype, _TIGHT_TOLERANCE.get(dtype, 0))


def _assert_leaf_close(a, b, atol, rtol, err_msg):
  a, b = np.asarray(a), np.asarray(b)
  assert a.shape == b.shape, (a.shape, b.shape)
  at = max(_tol_for(a.dtype, atol), _tol_for(b.dtype, atol)) * a.size
  rt = max(_tol_for(a.dtype, rtol), _tol_for(b.dtype, rtol)) * b.size
  widen = lambda x: x.astype(np.float32) if x.dtype == dtypes.bfloat16 else x
  kw = {k: v for k, v in (("atol", at), ("rtol", rt)) if v}
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(widen(a), widen(b), err_msg=err_msg, **kw)


def _check_close(xs, ys, atol, rtol, err_msg):
  tree_util.tree_map(lambda a, b: _assert_leaf_close(a, b, atol, rtol, err_msg), xs, ys)


def _draw_like(rng, x):
  """A standard-normal direction shaped and typed as x (complex: real + 1j * imaginary, two
  draws); a Python scalar gets a Python scalar."""
  dt = _dtype(x)
  shape = np.shape(x)
  t = np.asarray(rng.randn(*shape), dtype=dt)
  if dt.kind == "c":
    t = t + dt.type(1j) * np.asarray(rng.randn(*shape), dtype=dt)
  return t.item() if _is_py_scalar(x) else t


def _typed(op):
  """op on leaves, the result in the first operand's dtype (a Python scalar stays one)."""
  def leaf(*xs):
    out = np.array(op(*xs), dtype=_dtype(xs[0]))
    return out.item() if all(map(_is_py_scalar, xs)) else out
  return lambda *trees: tree_util.tree_map(leaf, *trees)


_add, _conj = _typed(lambda x, y: x + y), _typed(np.conj)


def _scale(tree, a):
  def leaf(x):
    dt = _dtype(x)
    out = np.multiply(x, np.array(a, dtype=dt), dtype=dt)
    return out.item() if _is_py_scalar(x) else out
  return tree_util.tree_map(leaf, tree)


def _diff(xs, ys):
  """x - y in x's dtype, with inf - inf (any equal pair) exactly 0."""
  def leaf(x, y):
    dt = _dtype(x)
    with np.errstate(invalid="ignore"):
      return np.where(np.equal(x, y), np.array(0, dt), np.subtract(x, y, dtype=dt))
  return tree_util.tree_map(leaf, xs, ys)


def _numerical_jvp(f, primals, tangents, eps):
  step = _scale(tangents, eps)
  up = f(*_add(primals, step))
  down = f(*_add(primals, _scale(step, -1)))
  return _scale(_diff(up, down), 0.5 / eps)


def _inner(xs, ys):
  parts = tree_util.tree_leaves(tree_util.tree_map(
      lambda x, y: np.real(np.dot(np.conj(x).reshape(-1), np.asarray(y).reshape(-1))),
      xs, ys))
  total = parts[0]
  for p in parts[1:]:
    total = np.add(total, p)
  return total


def _check_dtypes_match(xs, ys):
  def leaf(x, y):
    assert dtypes.canonicalize_dtype(_dtype(x)) == dtypes.canonicalize_dtype(_dtype(y)), \
        (_dtype(x), _dtype(y))
  tree_util.tree_map(leaf, xs, ys)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=_EPS, err_msg=""):
  """f_jvp(args, tangents) against central differences along one random direction."""
  atol, rtol = _with_defaults(atol), _with_defaults(rtol)
  rng = np.random.RandomState(0)
  tangent = tree_util.tree_map(lambda x: _draw_like(rng, x), args)
  out, out_dot = f_jvp(args, tangent)
  _check_dtypes_match(out, out_dot)
  expected = f(*args)
  _check_dtypes_match(out, expected)
  numeric = _numerical_jvp(f, args, tangent, eps)
  _check_close(out, expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  _check_close(out_dot, numeric, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=_EPS, err_msg=""):
  """<t, vjp(ct)> against <J t, ct> from central differences, for random t and ct."""
  atol, rtol = _with_defaults(atol), _with_defaults(rtol)
  rng = np.random.RandomState(0)
  out, pullback = f_vjp(*args)
  _check_close(out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  tangent = tree_util.tree_map(lambda x: _draw_like(rng, x), args)
  numeric = _numerical_jvp(f, args, tangent, eps)
  cotangent = tree_util.tree_map(lambda x: _draw_like(rng, x), out)
  pulled = _conj(pullback(_conj(cotangent)))
  _check_close(_inner(tangent, pulled), _inner(numeric, cotangent), atol, rtol,
               f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def _jvp_by_linearize(f, primals, tangents):
  out, f_lin = ad.linearize(f, *primals)
  return out, f_lin(*tangents)


def check_grads(f, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check f's derivatives up to `order` at `args` in the given modes ("fwd": jvp, "rev":
  vjp, "lin": linearize) against finite differences; raises AssertionError naming the
  failing check."""
  eps = eps or _EPS
  args = tuple(args)
  if not set(modes) <= {"fwd", "rev", "lin"}:
    raise ValueError(f"check_grads: modes must be among 'fwd', 'rev' and 'lin', got {modes!r}")

  def check(f, args, order, msg):
    if "fwd" in modes:
      name = f"JVP of {msg}" if msg else "JVP"
      jvp_f = lambda p, t, f=f: ad.jvp(f, p, t)
      check_jvp(f, jvp_f, args, atol, rtol, eps, name)
      if order > 1:
        check(jvp_f, (args, args), order - 1, name)
    if "rev" in modes:
      name = f"VJP of {msg}" if msg else "VJP"
      check_vjp(f, lambda *p: ad.vjp(f, *p), args, atol, rtol, eps, name)
      if order > 1:
        def f_vjp(*p):
          out, pullback = ad.vjp(f, *p)
          return pullback(out)
        check(f_vjp, args, order - 1, name)
    if "lin" in modes:
      name = f"LIN of {msg}" if msg else "LIN"
      lin_f = lambda p, t, f=f: _jvp_by_linearize(f, p, t)
      check_jvp(f, lin_f, args, atol, rtol, eps, name)
      if order > 1:
        check(lin_f, (args, args), order - 1, name)
  check(f, args, order, "")
