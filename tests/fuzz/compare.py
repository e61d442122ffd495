"""Comparing two results of one program: dtype, shape, and values within a per-dtype
tolerance.

Integers and bools compare exactly. Floats compare with a relative tolerance of their
precision, scaled by the largest magnitude of the reference (`atol = rtol * max(1, |ref|)`):
a sum's order or a polynomial transcendental changes low bits, and cancellation later in
the program turns that into an absolute, not a relative, error. NaN must meet NaN and an
infinity the same infinity.
"""
from __future__ import annotations

import numpy as np

# relative tolerance per (real component) dtype: a few ulps, times the error growth of an
# 8-op chain; grads and JAX (another math library) get the loose column
RTOL = {"float16": 2e-2, "bfloat16": 1e-1, "float32": 2e-4, "float64": 1e-9}
RTOL_LOOSE = {"float16": 5e-2, "bfloat16": 2e-1, "float32": 2e-3, "float64": 1e-7}


def _real_name(dtype: np.dtype) -> str:
  if dtype.kind == "c":
    return "float32" if dtype.itemsize == 8 else "float64"
  return dtype.name


def mismatch(ref, got, *, loose: bool = False, check_dtype: bool = True,
             through: frozenset = frozenset()) -> str | None:
  """None when `got` matches `ref`, else a one-line description of the difference.
  `through`: dtypes of the program's intermediate values; a float result computed through
  a less precise float (a bfloat16 sum cast to float32) gets that float's tolerance."""
  ref, got = np.asarray(ref), np.asarray(got)
  if check_dtype and ref.dtype != got.dtype:
    return f"dtype {got.dtype} != reference {ref.dtype}"
  if ref.shape != got.shape:
    return f"shape {got.shape} != reference {ref.shape}"
  if ref.size == 0:
    return None
  name = _real_name(ref.dtype)
  if name not in RTOL:                   # ints, bools: exact
    bad = ref != got
    if not bad.any():
      return None
    i = np.argwhere(bad)[0]
    return f"at {tuple(int(k) for k in i)}: {got[tuple(i)]!r} != reference {ref[tuple(i)]!r}"
  wide = np.complex128 if ref.dtype.kind == "c" else np.float64
  r, g = ref.astype(wide), got.astype(wide)
  parts = (r.real, g.real, r.imag, g.imag) if ref.dtype.kind == "c" else (r, g, None, None)
  table = RTOL_LOOSE if loose else RTOL
  real = {"complex64": "float32", "complex128": "float64"}
  rtol = max([table[name]] + [table[real.get(d, d)] for d in through
                              if real.get(d, d) in table])
  with np.errstate(invalid="ignore", over="ignore"):
    return _float_mismatch(ref, got, parts, rtol)


def _float_mismatch(ref, got, parts, rtol) -> str | None:
  for rr, gg in (parts[:2], parts[2:]):
    if rr is None:
      continue
    nan_r, nan_g = np.isnan(rr), np.isnan(gg)
    finite = np.isfinite(rr) & np.isfinite(gg)
    scale = max(1.0, float(np.max(np.abs(rr[np.isfinite(rr)]), initial=0.0)))
    close = np.abs(rr - gg) <= rtol * scale + rtol * np.abs(rr)
    ok = np.where(finite, close, (nan_r & nan_g) | (rr == gg))
    if not ok.all():
      i = tuple(int(k) for k in np.argwhere(~ok)[0])
      return (f"at {i}: {got[i]!r} != reference {ref[i]!r} "
              f"(max abs diff {np.nanmax(np.abs(rr - gg)[finite], initial=0.0):.3g}, rtol {rtol})")
  return None
