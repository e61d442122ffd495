"""The `eager_alone` check: every primitive of a program, called alone outside jit, gives
the bits jit gives it (issue 31: ember's eager mode picks per signature between a
primitive's NumPy reference and a compiled one-op computation, and must never change a
value by that choice).

The program is traced to a jaxpr; its equations run one by one on the values the eager
program computes. For each equation three results of the same inputs are compared bit for
bit (NaNs of any payload count as equal; -0.0 and 0.0 do not):
  eager       prim.bind outside jit: what a user's call gets (reference, bucketed or
              compiled, whatever driver/eager.py chose for the signature)
  reference   the primitive's NumPy reference, for primitives that declare it exact
              (`reference_exact`: they run it while renting)
  jit         jax.jit of the primitive alone
Control-flow primitives are called alone too: their bodies run as they would eagerly.
"""
from __future__ import annotations

import numpy as np


def _parts(x: np.ndarray) -> list[np.ndarray]:
  """The array's real parts, flat: complex as its real and imaginary parts."""
  x = np.ascontiguousarray(x).reshape(-1)
  return [x.real.copy(), x.imag.copy()] if x.dtype.kind == "c" else [x]


def _same(want: np.ndarray, got: np.ndarray) -> np.ndarray:
  """Elementwise: the same bits, or both NaN (of any payload; -0.0 and 0.0 differ)."""
  if want.dtype.kind == "b":
    return want == got
  u = np.dtype(f"u{want.dtype.itemsize}")
  same = want.view(u) == got.view(u)
  if want.dtype.kind in "fV":     # (ml_dtypes' narrow floats are kind V)
    same |= np.isnan(want.astype(np.float64)) & np.isnan(got.astype(np.float64))
  return same


def bit_difference(want, got) -> str | None:
  """None when `got` has `want`'s dtype, shape and bits, else where they first differ."""
  want, got = np.asarray(want), np.asarray(got)
  if want.dtype != got.dtype:
    return f"dtype {got.dtype} != {want.dtype}"
  if want.shape != got.shape:
    return f"shape {got.shape} != {want.shape}"
  for part, (w, g) in enumerate(zip(_parts(want), _parts(got))):
    same = _same(w, g)
    if not same.all():
      i = int(np.argmin(same))
      at = tuple(int(k) for k in np.unravel_index(i, want.shape))
      which = ("", " (real part)", " (imaginary part)")[part + (want.dtype.kind == "c")]
      return f"at {at}{which}: {g[i]!r} != {w[i]!r}"
  return None


def _one_op(prim, params, literals: dict, n: int):
  """fn(*operands) binding `prim` with the equation's literals in their places."""
  def fn(*xs):
    it = iter(xs)
    vals = [literals[i] if i in literals else next(it) for i in range(n)]
    return prim.bind(*vals, **params)
  return fn


def failures(f, args) -> list[str]:
  """One line per (equation, result) whose eager or reference bits differ from jit's."""
  import ember as jax
  from ember._src.core import trace as trace_lib
  from ember._src.core.jaxpr import DropVar, Literal
  closed = jax.make_jaxpr(f)(*args)
  jaxpr = closed.jaxpr
  env = {id(v): c for v, c in zip(jaxpr.constvars, closed.consts)}
  env.update((id(v), a) for v, a in zip(jaxpr.invars, args))
  found = []
  for k, eqn in enumerate(jaxpr.eqns):
    prim, params = eqn.primitive, eqn.params
    literals = {i: trace_lib.literal_value(v) for i, v in enumerate(eqn.invars)
                if isinstance(v, Literal)}
    operands = [env[id(v)] for v in eqn.invars if not isinstance(v, Literal)]
    fn = _one_op(prim, params, literals, len(eqn.invars))
    as_list = (lambda o: list(o)) if prim.multiple_results else (lambda o: [o])
    eager = as_list(fn(*operands))
    results = {"eager": eager, "jit": as_list(jax.jit(fn)(*operands))}
    if prim.reference_exact:
      vals = [literals[i] if i in literals else env[id(v)] for i, v in enumerate(eqn.invars)]
      results["reference"] = trace_lib.eval_reference(prim, vals, params)
    shapes = ", ".join(f"{np.asarray(o).dtype}{list(np.shape(o))}" for o in operands)
    for name in ("eager", "reference"):
      for j, (got, want) in enumerate(zip(results.get(name, ()), results["jit"])):
        diff = bit_difference(want, got)
        if diff:
          found.append(f"equation {k} `{prim.name}`({shapes}) result {j}: {name} vs jit: "
                       f"{diff}")
    for v, o in zip(eqn.outvars, eager):
      if not isinstance(v, DropVar):
        env[id(v)] = o
  return found
