"""`check_grads` (jax.test_util): a function's jvp and vjp checked against central finite
differences, to any order."""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes, tree_util
from ember._src.transforms import ad

__all__ = ["check_grads", "check_jvp", "check_vjp"]

# JAX's default tolerances for gradient checks, by dtype
_TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(dtypes.bfloat16): 1e-1,
              np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
              np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5}
_EPS = 1e-4


def _leaves(tree) -> list[np.ndarray]:
  return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def _tolerance(trees, given) -> float:
  if given is not None:
    return given
  return max([_TOLERANCE.get(x.dtype, 1e-5) for t in trees for x in _leaves(t)] or [1e-5])


def _random_like(tree, rng):
  def one(x):
    x = np.asarray(x)
    t = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
      t = t + 1j * rng.standard_normal(x.shape)
    return t.astype(x.dtype)
  return tree_util.tree_map(one, tree)


def _axpy(a, x, y):
  return tree_util.tree_map(lambda u, v: (np.asarray(v) + a * np.asarray(u)).astype(
      np.asarray(v).dtype), x, y)


def _inner(x, y) -> complex:
  return sum(np.vdot(a.astype(np.complex128), b.astype(np.complex128))
             for a, b in zip(_leaves(x), _leaves(y)))


def _assert_close(got, want, atol, rtol, what):
  for g, w in zip(_leaves(got), _leaves(want)):
    np.testing.assert_allclose(g.astype(np.complex128), w.astype(np.complex128),
                               atol=atol, rtol=rtol, err_msg=what)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=_EPS, err_msg="JVP"):
  """f_jvp(args, tangents) against (f(args + eps t) - f(args - eps t)) / 2 eps."""
  rng = np.random.default_rng(0)
  tangent = _random_like(args, rng)
  out, out_dot = f_jvp(args, tangent)
  numeric = tree_util.tree_map(
      lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps),
      f(*_axpy(eps, tangent, args)), f(*_axpy(-eps, tangent, args)))
  atol, rtol = _tolerance([out], atol), _tolerance([out], rtol)
  _assert_close(out, f(*args), atol, rtol, f"{err_msg} primal")
  _assert_close(out_dot, numeric, atol, rtol, f"{err_msg} tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=_EPS, err_msg="VJP"):
  """<ct, J t> from finite differences against <vjp(ct), t>, for random t and ct."""
  rng = np.random.default_rng(1)
  out, pullback = f_vjp(*args)
  tangent = _random_like(args, rng)
  cotangent = _random_like(out, rng)
  numeric = tree_util.tree_map(
      lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps),
      f(*_axpy(eps, tangent, args)), f(*_axpy(-eps, tangent, args)))
  ip_numeric = _inner(cotangent, numeric)
  ip_vjp = _inner(pullback(cotangent), tangent)
  atol, rtol = _tolerance([out], atol), _tolerance([out], rtol)
  np.testing.assert_allclose(ip_vjp, ip_numeric, atol=atol, rtol=rtol,
                             err_msg=f"{err_msg}: <vjp(ct), t> != <ct, J t>")


def check_grads(f, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check f's derivatives up to `order` at `args` in the given modes ("fwd": jvp, "rev":
  vjp) against finite differences; raises AssertionError naming the failing check."""
  eps = _EPS if eps is None else eps
  args = tuple(args)
  if not set(modes) <= {"fwd", "rev"}:
    raise ValueError(f"check_grads: modes must be among 'fwd' and 'rev', got {modes!r}")

  def check(f, args, order, msg):
    if "fwd" in modes:
      name = f"JVP of {msg}" if msg else "JVP"
      check_jvp(f, lambda p, t: ad.jvp(f, p, t), args, atol, rtol, eps, name)
      if order > 1:
        check(lambda p, t: ad.jvp(f, p, t), (args, args), order - 1, name)
    if "rev" in modes:
      name = f"VJP of {msg}" if msg else "VJP"
      check_vjp(f, lambda *p: ad.vjp(f, *p), args, atol, rtol, eps, name)
      if order > 1:
        def f_vjp(*p):
          out, pullback = ad.vjp(f, *p)
          return pullback(out)
        check(f_vjp, args, order - 1, name)
  check(f, args, order, "")
