"""dot_general in NumPy with XLA's dtype rule: the dot_general primitive's impl (and its
shape/dtype rule and lowering, which multiply in the same dtype) and hlo_eval's `dot`.

`dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`; the result
dims are batch, then lhs free, then rhs free (XLA's DotGeneral).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ember._src.base import dtypes
from ember._src.base.dtypes import dtype_kind


# --- dtype rule (XLA's HigherPrecisionType + MaybeUpcast, as JAX reproduces it) ----------

def _bit_width(dt) -> int:
  dt = np.dtype(dt)
  if dt == np.bool_:
    return 1
  return dt.itemsize * 4 if dt.kind == "c" else dt.itemsize * 8  # complex: finfo(c).bits


@functools.lru_cache(maxsize=256)   # (dtypes hash; finfo costs ~2 us a call)
def _type_properties(dt):
  kind = dtype_kind(dt)
  real = np.dtype(dt) if kind != "c" else np.dtype(np.float32 if np.dtype(dt).itemsize == 8
                                                   else np.float64)
  is_float = dtype_kind(real) == "f"
  return (kind == "c", dtypes.finfo(real).maxexp if is_float else -1,
          dtypes.finfo(real).nmant if is_float else -1, _bit_width(real), kind != "u")


@functools.lru_cache(maxsize=1024)   # every eager dot asks: ~10 us of finfo uncached
def dot_dtype(lhs_dt, rhs_dt, preferred):
  lp, rp = _type_properties(lhs_dt), _type_properties(rhs_dt)
  if lp == rp and lhs_dt != rhs_dt:
    raise TypeError(f"lax.dot_general argument type error: {lhs_dt}, {rhs_dt}")
  out = lhs_dt if lp >= rp else rhs_dt
  if preferred is None or preferred == out:
    return out
  if dtype_kind(out) != "f" and _bit_width(preferred) < _bit_width(out):
    raise TypeError(f"`preferred_element_type` must not be narrower than the original type, "
                    f"got preferred_element_type of {np.dtype(preferred).name} for result "
                    f"type of {np.dtype(out).name}.")
  return np.dtype(preferred)


@functools.lru_cache(maxsize=1024)
def dot_compute_dtype(lhs_dt, rhs_dt, out_dt):
  """The dtype the impl multiplies in: the output type, as JAX converts both operands to
  the preferred type (uint32 x int8 -> int64 multiplies in int64, not in uint32), unless
  that is a lesser kind than the inputs' (float inputs with an integer preferred type);
  16-bit floats in float32."""
  in_dt = dot_dtype(lhs_dt, rhs_dt, None)
  rank = lambda dt: {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}[dtype_kind(dt)]
  cdt = in_dt if rank(out_dt) < rank(in_dt) else np.dtype(out_dt)
  return np.dtype(np.float32) if dtype_kind(cdt) == "f" and np.dtype(cdt).itemsize < 4 else cdt


# --- the contraction ----------------------------------------------------------------------

def dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None,
                out_sharding=None):
  (lc, rc), (lb, rb) = dimension_numbers
  out_dt = dot_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  cdt = dot_compute_dtype(lhs.dtype, rhs.dtype, out_dt)
  lf = [i for i in range(lhs.ndim) if i not in lc + lb]
  rf = [i for i in range(rhs.ndim) if i not in rc + rb]
  size = lambda x, dims: math.prod(x.shape[i] for i in dims)
  b, m, k, n = size(lhs, lb), size(lhs, lf), size(lhs, lc), size(rhs, rf)
  # (views where the dtype is already the compute type: an eager 6000x784 @ 784x1024 spent
  # a fifth of its time copying its operands)
  l3 = np.transpose(lhs, lb + tuple(lf) + lc).astype(cdt, copy=False).reshape(b, m, k)
  r3 = np.transpose(rhs, rb + rc + tuple(rf)).astype(cdt, copy=False).reshape(b, k, n)
  with np.errstate(over="ignore", invalid="ignore"):
    out = np.matmul(l3, r3)
  shape = [lhs.shape[i] for i in lb + tuple(lf)] + [rhs.shape[i] for i in rf]
  if dtype_kind(cdt) == "c" and dtype_kind(out_dt) != "c":
    out = out.real
  return out.reshape(shape).astype(out_dt, copy=False)
