"""dot_general (the one contraction primitive) and the `lax` functions on it: dot,
batch_matmul; and `lax.Precision`.

`dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`; the result
dims are batch, then lhs free, then rhs free (XLA's DotGeneral). The result dtype follows
JAX/XLA's rule: the "higher precision" input type, upcast to `preferred_element_type`
(reference/linalg.py has it, with the NumPy contraction).
"""
from __future__ import annotations

import enum
import operator
from typing import Any, NamedTuple

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.base.config import config, enable_x64
from ember._src.core import ShapedArray
from ember._src.primitives import declare, dtype_kind
from ember._src.reference import linalg as reference_linalg
from ember._src.transforms import ad
from ember._src.primitives.structural import transpose
from ember._src.primitives.elementwise import convert_element_type

__all__ = ["dot_general", "dot", "batch_matmul", "Precision", "DotAlgorithm", "DotAlgorithmPreset"]


class Precision(enum.Enum):
  """Matmul precision. It has no effect on CPU; it is kept (and printed) for JAX parity."""
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    return _PRECISION_STRINGS.get(value)

  def __repr__(self):
    return f"{type(self).__name__}.{self.name}"

  def __str__(self):
    return self.name


_PRECISION_STRINGS = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
}


class DotAlgorithm(NamedTuple):
  """A dot algorithm by its storage and accumulation types (`lax.DotAlgorithm`). As JAX's
  CPU backend, ember's dot_general rejects it: use a DotAlgorithmPreset."""
  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
  """Named dot algorithms (`lax.DotAlgorithmPreset`): the operand types an algorithm takes
  and the type it accumulates in. On the CPU (as XLA:CPU) operands of an unsupported type
  are converted to the first supported one and accumulated in `accumulation_type`; the
  8-bit, TF32, BF16_BF16_BF16 and BF16_BF16_F32_X9 algorithms are rejected."""
  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  F8E4M3FN_F8E4M3FN_F32_X3 = enum.auto()
  F8E4M3FN_F8E4M3FN_F32_X4 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self):
    return f"{type(self).__name__}.{self.name}"

  def __str__(self):
    return self.name

  @property
  def supported_lhs_types(self):
    name = self.name
    if name == "DEFAULT" or name.startswith("ANY_F8"):
      return None
    if name.startswith("F16_"):
      return (np.float16,)
    if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
      return (dtypes.bfloat16, np.float32)
    if name.startswith("F8E4M3FN"):
      return (np.float32, dtypes.bfloat16)
    return (np.float64,) if name == "F64_F64_F64" else (np.float32,)

  @property
  def supported_rhs_types(self):
    return self.supported_lhs_types

  @property
  def accumulation_type(self):
    name = self.name
    if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
      return None
    return {"F16_F16_F16": np.float16, "BF16_BF16_BF16": dtypes.bfloat16,
            "F64_F64_F64": np.float64}.get(name, np.float32)


_CPU_REJECTED_PRESETS = ("ANY_F8", "F8E4M3FN", "TF32", "BF16_BF16_BF16", "BF16_BF16_F32_X9")


def _dot_with_algorithm(lhs, rhs, dimension_numbers, algorithm, preferred_element_type):
  """dot_general as XLA:CPU runs `algorithm`: operands of a type it does not take are
  converted to its first type, the product accumulated in its accumulation type, the result
  converted to the dot's own output type."""
  if isinstance(algorithm, DotAlgorithm) or algorithm.name.startswith(_CPU_REJECTED_PRESETS):
    raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")
  dims = _canonicalize_dimension_numbers(dimension_numbers)
  out_dt = reference_linalg.dot_dtype(core.get_aval(lhs).dtype, core.get_aval(rhs).dtype,
                                      preferred_element_type)
  types = algorithm.supported_lhs_types
  if types is None or core.get_aval(lhs).dtype in map(np.dtype, types):
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=None,
                              preferred_element_type=preferred_element_type, out_sharding=None)
  with enable_x64(True):   # F64_F64_F64 computes in float64 in any mode, as XLA
    lhs, rhs = (convert_element_type(x, types[0]) for x in (lhs, rhs))
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=None,
                             preferred_element_type=np.dtype(algorithm.accumulation_type),
                             out_sharding=None)
    return convert_element_type(out, out_dt)


def canonicalize_precision(precision):
  """None, a string, a Precision, or a pair of them -> None or (Precision, Precision)."""
  if precision is None:
    default = config.jax_default_matmul_precision
    return None if default is None else canonicalize_precision(default)
  if isinstance(precision, str) and precision in _PRECISION_STRINGS:
    return (_PRECISION_STRINGS[precision],) * 2
  if isinstance(precision, Precision):
    return precision, precision
  if (isinstance(precision, (list, tuple)) and len(precision) == 2
      and all(isinstance(p, (Precision, str)) for p in precision)):
    try:
      return tuple(p if isinstance(p, Precision) else _PRECISION_STRINGS[p]
                   for p in precision)
    except KeyError:
      pass
  raise ValueError(f"Precision argument must be one of: None, a string in "
                   f"{list(_PRECISION_STRINGS)}, a lax.Precision value, or a tuple of two "
                   f"lax.Precision values or strings; but got {precision}.")


# --- shape rule -------------------------------------------------------------------------

def _dot_general_shape(lhs, rhs, dimension_numbers) -> tuple:
  (lc, rc), (lb, rb) = dimension_numbers
  for side, aval, c, b in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
    if not all(0 <= d < aval.ndim for d in c + b):
      raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative and "
                      f"less than the number of axes of the {side} value, got {side}_batch of "
                      f"{b} and {side}_contracting of {c} for {side} of rank {aval.ndim}")
  if len(lb) != len(rb):
    raise TypeError(f"dot_general requires equal numbers of lhs_batch and rhs_batch "
                    f"dimensions, got lhs_batch {lb} and rhs_batch {rb}.")
  for side, c, b in (("lhs", lc, lb), ("rhs", rc, rb)):
    if len(set(b)) != len(b):
      raise TypeError(f"dot_general requires {side} batch dimensions to be distinct, got "
                      f"{side}_batch {b}.")
    if len(set(c)) != len(c):
      raise TypeError(f"dot_general requires {side} contracting dimensions to be distinct, "
                      f"got {side}_contracting {c}.")
    if set(c) & set(b):
      raise TypeError(f"dot_general requires {side} batch dimensions to be disjoint from "
                      f"contracting dimensions, got {side}_batch {b} and {side}_contracting "
                      f"{c}.")
  lbs, rbs = tuple(lhs.shape[i] for i in lb), tuple(rhs.shape[i] for i in rb)
  if lbs != rbs:
    raise TypeError(f"dot_general requires lhs batch dimensions and rhs batch dimensions to "
                    f"have the same shape, got {lbs} and {rbs}.")
  lcs, rcs = tuple(lhs.shape[i] for i in lc), tuple(rhs.shape[i] for i in rc)
  if lcs != rcs:
    raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                    f"got {lcs} and {rcs}.")
  lfree = tuple(d for i, d in enumerate(lhs.shape) if i not in lc + lb)
  rfree = tuple(d for i, d in enumerate(rhs.shape) if i not in rc + rb)
  return lbs + lfree + rfree


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision=None,
                               preferred_element_type=None, out_sharding=None):
  shape = _dot_general_shape(lhs, rhs, dimension_numbers)
  dt = reference_linalg.dot_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  return ShapedArray(shape, dt, lhs.weak_type and rhs.weak_type)


def _dot_general_pp(eqn, ctx):
  # JAX hides None params and out_sharding, and prints dimension numbers as lists.
  params = {k: v for k, v in eqn.params.items() if v is not None and k != "out_sharding"}
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  params["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
  return core._pp_eqn(eqn, ctx, params)


dot_general_p = declare("dot_general", _dot_general_abstract_eval,
                        reference_linalg.dot_general)
dot_general_p.pp_rule = _dot_general_pp


def _dot_general_batch(axis_data, vals, dims, *, dimension_numbers, precision=None,
                       preferred_element_type=None, out_sharding=None):
  """JAX's rule: two batched operands gain a leading dot batch dimension; one batched
  operand keeps its batch dimension as a free (tensor) dimension of the product."""
  (lhs, rhs), (lbd, rbd) = vals, dims
  (lc, rc), (lb, rb) = dimension_numbers
  lnd = core.get_aval(lhs).ndim
  bump = lambda ds, b: tuple(np.add(ds, np.greater_equal(ds, b)))
  if lbd is not None and rbd is not None:
    lb, rb = (lbd,) + bump(lb, lbd), (rbd,) + bump(rb, rbd)
    lc, rc, out_bd = bump(lc, lbd), bump(rc, rbd), 0
  elif lbd is not None:
    free = [d for d in range(lnd) if d not in lb and d not in lc]
    out_bd = len(lb) + int(sum(np.less(free, lbd)))
    lb, lc = bump(lb, lbd), bump(lc, lbd)
  else:
    free = [d for d in range(core.get_aval(rhs).ndim) if d not in rb and d not in rc]
    out_bd = lnd - len(lc) + int(sum(np.less(free, rbd)))
    rb, rc = bump(rb, rbd), bump(rc, rbd)
  out = dot_general_p.bind(
      lhs, rhs, dimension_numbers=_canonicalize_dimension_numbers(((lc, rc), (lb, rb))),
      precision=precision, preferred_element_type=preferred_element_type, out_sharding=None)
  return out, out_bd


dot_general_p.batch = _dot_general_batch


def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision=None,
                       preferred_element_type=None, out_sharding=None):
  """One `dot` (XLA's DotGeneral: any batch/contracting dims; result dims are batch, lhs
  free, rhs free, as the primitive's), on operands converted to the impl's compute dtype,
  and a convert of the result when that differs from the output dtype."""
  (lc, rc), (lb, rb) = dimension_numbers
  out_dt = ctx.avals_out[0].dtype
  cdt = reference_linalg.dot_compute_dtype(lhs.dtype, rhs.dtype, out_dt)
  lhs, rhs = ctx.convert(lhs, cdt), ctx.convert(rhs, cdt)
  attrs = {"lhs_contracting_dims": tuple(lc), "rhs_contracting_dims": tuple(rc),
           "lhs_batch_dims": tuple(lb), "rhs_batch_dims": tuple(rb),
           "precision": tuple(p.name for p in precision) if precision else None}
  out = ctx.emit("dot", ctx.out_shape()._replace(dtype=cdt), [lhs, rhs], attrs)
  if dtype_kind(cdt) == "c" and dtype_kind(out_dt) != "c":
    out = ctx.elementwise("real", out, dtype=np.float64 if cdt.itemsize == 16 else np.float32)
  return ctx.convert(out, out_dt)


dot_general_p.lower = _dot_general_lower


def _index_tuple(x) -> tuple:
  if type(x) is tuple and all(type(d) is int for d in x):
    return x     # (eager calls come with tuples of ints: no new tuple)
  if isinstance(x, (int, np.integer)):
    return (operator.index(x),)
  return tuple(operator.index(d) for d in x)


def _canonicalize_dimension_numbers(dimension_numbers):
  try:
    (lc, rc), (lb, rb) = dimension_numbers
    return ((_index_tuple(lc), _index_tuple(rc)), (_index_tuple(lb), _index_tuple(rb)))
  except (TypeError, ValueError):
    raise TypeError(f"dot_general dimension_numbers must be ((lhs_contracting, "
                    f"rhs_contracting), (lhs_batch, rhs_batch)) with sequences of ints, "
                    f"got {dimension_numbers!r}.") from None


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                *, out_sharding=None):
  """General tensor contraction (XLA DotGeneral)."""
  return dot(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
             preferred_element_type=preferred_element_type)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
  """Matrix/vector products (contract lhs's last dim with rhs's first), or dot_general."""
  if dimension_numbers is None:
    ls, rs = core.get_aval(lhs).shape, core.get_aval(rhs).shape
    if 1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]:
      dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
    else:
      raise ValueError("jax.lax.dot: dimension_numbers must be specified when not performing "
                       "simple un-batched matrix-matrix, matrix-vector, or vector-vector "
                       f"products; got lhs_shape={ls} rhs_shape={rs}")
  pet = (None if preferred_element_type is None
         else dtypes.check_user_dtype(preferred_element_type, "dot"))
  if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
    return _dot_with_algorithm(lhs, rhs, dimension_numbers, precision, pet)
  return dot_general_p.bind(
      lhs, rhs, dimension_numbers=_canonicalize_dimension_numbers(dimension_numbers),
      precision=canonicalize_precision(precision), preferred_element_type=pet,
      out_sharding=None)


def batch_matmul(lhs, rhs, precision=None):
  """Batched matrix product over leading dims: (..., m, k) @ (..., k, n)."""
  ln, rn = core.get_aval(lhs).ndim, core.get_aval(rhs).ndim
  if min(ln, rn) < 2:
    raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ln}, {rn}")
  if ln != rn:
    raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ln}, {rn}")
  batch = tuple(range(ln - 2))
  return dot_general(lhs, rhs, (((ln - 1,), (rn - 2,)), (batch, batch)), precision=precision)


# --- differentiation: dot_general is bilinear; its transposes are dot_generals of the
# cotangent with the other operand, then a transpose into the operand's layout (JAX's) ----

def _ranges_like(*xs):
  start = 0
  for x in xs:
    yield tuple(range(start, start + len(x)))
    start += len(x)


def _remaining(original, *removed_lists):
  removed = {i for r in removed_lists for i in r}
  return [i for i in original if i not in removed]


def _dot_transpose_lhs(ct, x_aval, y, *, dimension_numbers, precision,
                       preferred_element_type, swap_ans=False):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  y_ndim = core.get_aval(y).ndim if not isinstance(y, ShapedArray) else y.ndim
  x_kept = _remaining(range(x_aval.ndim), x_contract, x_batch)
  y_kept = _remaining(range(y_ndim), y_contract, y_batch)
  if swap_ans:
    ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
  else:
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
  dims = ((ans_y, tuple(y_kept)), (ans_batch, tuple(y_batch)))
  x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
  out_axes = tuple(int(i) for i in np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y))
  x_bar = transpose(dot_general_p.bind(ct, y, dimension_numbers=_canonicalize_dimension_numbers(dims),
                                       precision=precision,
                                       preferred_element_type=preferred_element_type,
                                       out_sharding=None), out_axes)
  return convert_element_type(x_bar, x_aval.dtype)


def _dot_general_transpose(ct, x, y, *, dimension_numbers, precision=None,
                           preferred_element_type=None, out_sharding=None):
  if ad.is_undefined_primal(x) and ad.is_undefined_primal(y):
    raise ValueError("dot_general of two linear values is not linear: cannot transpose it")
  if ad.is_undefined_primal(x):
    return [_dot_transpose_lhs(ct, x.aval, y, dimension_numbers=dimension_numbers,
                               precision=precision,
                               preferred_element_type=preferred_element_type), None]
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  return [None, _dot_transpose_lhs(ct, y.aval, x, dimension_numbers=swapped,
                                   precision=precision,
                                   preferred_element_type=preferred_element_type,
                                   swap_ans=True)]


ad.defbilinear(dot_general_p, _dot_general_transpose)
