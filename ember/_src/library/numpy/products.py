"""ember.numpy's products: dot, matmul, vdot, vecdot, matvec, vecmat, tensordot, inner,
outer, kron and cross (matmul, tensordot, vecdot, outer and cross are ember.numpy.linalg's
too: their signatures accept the array-API calls).

Every product lowers to ONE `dot_general` with JAX's dimension numbers and
`preferred_element_type` (the promoted dtype; operands keep their own dtypes), then a
convert to the promoted dtype carrying the weak type, as jax/_src/numpy/tensor_contractions.py
does.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.core.array import Array
from ember._src.primitives.linalg import dot_general_p, canonicalize_precision
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import ufuncs, util
from ember._src.library.numpy.reductions import asarray_args, aval, check_out, moveaxes
from ember._src.primitives.elementwise import convert_element_type

__all__ = ["dot", "matmul", "vdot", "vecdot", "inner", "outer", "tensordot", "kron", "cross",
           "matvec", "vecmat"]


def _result_dtype(fun_name, preferred_element_type, *args):
  """(dtype dot_general accumulates to, whether the result is weakly typed)."""
  if preferred_element_type is None:
    return dtypes.result_type(*args, return_weak_type_flag=True)
  return dtypes.check_user_dtype(preferred_element_type, fun_name), False


def _dot_general(a, b, dims, precision, pet, weak):
  out = lax.dot_general(a, b, dims, precision=precision, preferred_element_type=pet)
  return convert_element_type(out, pet, weak)


def _ravel(x):
  shape = aval(x).shape
  return x if len(shape) == 1 else lax.reshape(x, (math.prod(shape),))


def _contraction_mismatch(fun_name, a_shape, b_shape, a_dim, b_dim):
  raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got "
                  f"({a_shape[a_dim]},) and ({b_shape[b_dim]},): {fun_name} got operands of "
                  f"shapes {a_shape} and {b_shape}.")


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """NumPy dot: scalars multiply; otherwise contract a's last axis with b's second-to-last
  (or only) axis."""
  a, b = asarray_args("dot", a, b)
  pet, weak = _result_dtype("dot", preferred_element_type, a, b)
  a_shape, b_shape = aval(a).shape, aval(b).shape
  if not a_shape or not b_shape:
    contract = ((), ())
  else:
    contract = ((len(a_shape) - 1,), (0 if len(b_shape) == 1 else len(b_shape) - 2,))
    if a_shape[contract[0][0]] != b_shape[contract[1][0]]:
      _contraction_mismatch("dot", a_shape, b_shape, contract[0][0], contract[1][0])
  return _dot_general(a, b, (contract, ((), ())), precision, pet, weak)


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Matrix product with NumPy's rules: 1-D operands are vectors, leading (batch) axes
  broadcast, size-1 batch axes are squeezed before the dot_general."""
  if preferred_element_type is None:
    fast = _matmul_fast(a, b, precision)
    if fast is not None:
      return fast
  a, b = asarray_args("matmul", a, b)
  for i, x in enumerate((a, b)):
    if aval(x).ndim < 1:
      raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                       f"ndim {aval(x).ndim}")
  pet, weak = _result_dtype("matmul", preferred_element_type, a, b)
  a_shape, b_shape = aval(a).shape, aval(b).shape
  a_is_mat, b_is_mat = len(a_shape) > 1, len(b_shape) > 1
  b_core = len(b_shape) - 1 - b_is_mat
  if a_shape[-1] != b_shape[b_core]:
    _contraction_mismatch("matmul", a_shape, b_shape, len(a_shape) - 1, b_core)
  a_batch = a_shape[:-2] if a_is_mat else ()
  b_batch = b_shape[:-2] if b_is_mat else ()
  nb = max(len(a_batch), len(b_batch))
  a_batch = (None,) * (nb - len(a_batch)) + a_batch
  b_batch = (None,) * (nb - len(b_batch)) + b_batch

  # Classify each broadcast batch axis (JAX's algorithm): only in one operand, size 1 in
  # one (squeezed there, free in the other), or a true dot_general batch axis.
  a_squeeze, b_squeeze, both_squeeze, a_bdims, b_bdims = [], [], [], [], []
  idx_batch, idx_a_other, idx_b_other = [], [], []
  for i, (ba, bb) in enumerate(zip(a_batch, b_batch)):
    if ba is None:
      idx_b_other.append(i)
    elif bb is None:
      idx_a_other.append(i)
    elif ba == 1 and bb == 1:
      a_squeeze.append(len(idx_batch) + len(idx_a_other) + len(a_squeeze))
      b_squeeze.append(len(idx_batch) + len(idx_b_other) + len(b_squeeze))
      both_squeeze.append(i)
    elif ba == 1:
      idx_b_other.append(i)
      a_squeeze.append(len(idx_batch) + len(idx_a_other) + len(a_squeeze))
    elif bb == 1:
      idx_a_other.append(i)
      b_squeeze.append(len(idx_batch) + len(idx_b_other) + len(b_squeeze))
    elif ba == bb:
      a_bdims.append(len(idx_batch) + len(idx_a_other))
      b_bdims.append(len(idx_batch) + len(idx_b_other))
      idx_batch.append(i)
    else:
      raise ValueError(f"Incompatible types for matmul arguments: "
                       f"{aval(a).str_short(False)} and {aval(b).str_short(False)}")
  if a_is_mat:
    idx_a_other.append(nb)
  if b_is_mat:
    idx_b_other.append(nb + a_is_mat)
  perm = tuple(int(p) for p in np.argsort(idx_batch + idx_a_other + idx_b_other))
  a = lax.squeeze(a, tuple(a_squeeze))
  b = lax.squeeze(b, tuple(b_squeeze))
  a_nd, b_nd = aval(a).ndim, aval(b).ndim
  out = lax.dot_general(a, b, (((a_nd - 1,), (b_nd - 1 - b_is_mat,)),
                               (tuple(a_bdims), tuple(b_bdims))),
                        precision=precision, preferred_element_type=pet)
  if perm != tuple(range(len(perm))):
    out = lax.transpose(out, perm)
  if both_squeeze:
    out = lax.expand_dims(out, tuple(both_squeeze))
  return convert_element_type(out, pet, weak)


def _matmul_fast(a, b, precision):
  """`a @ b` of two Arrays of one dtype, neither weakly typed, each a matrix or a vector:
  one dot_general, answered without the general path's promotion and batch-axis
  bookkeeping (~15 us of Python per eager call; it would compute the same dot_general and
  no convert after it). None for anything else."""
  if type(a) is not Array or type(b) is not Array or a._dtype != b._dtype or \
      a._weak_type or b._weak_type:
    return None
  a_nd, b_nd = len(a._shape), len(b._shape)
  if not (1 <= a_nd <= 2 and 1 <= b_nd <= 2) or a._shape[-1] != b._shape[0]:
    return None
  # (the dimension numbers and the dtype are canonical already: lax.dot_general's checks
  # would only copy them)
  return dot_general_p.bind(a, b, dimension_numbers=_MATMUL_DIMS[a_nd - 1],
                            precision=canonicalize_precision(precision),
                            preferred_element_type=a._dtype, out_sharding=None)


_MATMUL_DIMS = tuple((((a_nd - 1,), (0,)), ((), ())) for a_nd in (1, 2))


def vdot(a, b, *, precision=None, preferred_element_type=None):
  """Dot product of the flattened arrays, conjugating the first."""
  a, b = asarray_args("vdot", a, b)
  if dtypes.is_complex(aval(a).dtype):
    a = lax.conj(a)
  return dot(_ravel(a), _ravel(b), precision=precision,
             preferred_element_type=preferred_element_type)


def _batched_vector_contraction(fun_name, x1, x2, core1, core2, precision, pet, weak):
  """Broadcast the leading (batch) axes of x1/x2 (which have `core1`/`core2` trailing core
  axes), then contract x1's last axis with x2's axis -core2 over a batched dot_general."""
  s1, s2 = aval(x1).shape, aval(x2).shape
  batch = util.broadcast_shapes(s1[:len(s1) - core1], s2[:len(s2) - core2])
  x1 = util.broadcast_to_shape(x1, batch + s1[len(s1) - core1:])
  x2 = util.broadcast_to_shape(x2, batch + s2[len(s2) - core2:])
  nb = len(batch)
  n1, n2 = aval(x1).ndim, aval(x2).ndim
  c1, c2 = n1 - 1, nb
  if aval(x1).shape[c1] != aval(x2).shape[c2]:
    raise ValueError(f"{fun_name}: the contracted axes must match, got operands of shapes "
                     f"{s1} and {s2}.")
  bd = tuple(range(nb))
  return _dot_general(x1, x2, (((c1,), (c2,)), (bd, bd)), precision, pet, weak)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """Vector dot product along `axis` (conjugating x1), broadcasting the other axes."""
  x1, x2 = asarray_args("jnp.vecdot", x1, x2)
  s1, s2 = aval(x1).shape, aval(x2).shape
  if s1[axis] != s2[axis]:
    raise ValueError(f"axes must match; got shapes {s1} and {s2} with axis={axis}")
  x1, x2 = moveaxes(x1, [axis], [-1]), moveaxes(x2, [axis], [-1])
  pet, weak = _result_dtype("vecdot", preferred_element_type, x1, x2)
  if dtypes.is_complex(aval(x1).dtype):
    x1 = lax.conj(x1)
  return _batched_vector_contraction("vecdot", x1, x2, 1, 1, precision, pet, weak)


@jit
def matvec(x1, x2, /):
  """Batched matrix-vector product: (..., n, m) x (..., m) -> (..., n)."""
  x1, x2 = asarray_args("matvec", x1, x2)
  if aval(x1).ndim < 2 or aval(x2).ndim < 1:
    raise ValueError(f"matvec requires x1 with ndim >= 2 and x2 with ndim >= 1, got shapes "
                     f"{aval(x1).shape} and {aval(x2).shape}")
  pet, weak = _result_dtype("matvec", None, x1, x2)
  return _batched_vector_contraction("matvec", x1, x2, 2, 1, None, pet, weak)


@jit
def vecmat(x1, x2, /):
  """Batched vector-matrix product conj(x1) @ x2: (..., n) x (..., n, m) -> (..., m)."""
  x1, x2 = asarray_args("vecmat", x1, x2)
  if aval(x1).ndim < 1 or aval(x2).ndim < 2:
    raise ValueError(f"vecmat requires x1 with ndim >= 1 and x2 with ndim >= 2, got shapes "
                     f"{aval(x1).shape} and {aval(x2).shape}")
  pet, weak = _result_dtype("vecmat", None, x1, x2)
  if dtypes.is_complex(aval(x1).dtype):
    x1 = lax.conj(x1)
  s1, s2 = aval(x1).shape, aval(x2).shape
  batch = util.broadcast_shapes(s1[:-1], s2[:-2])
  x1 = util.broadcast_to_shape(x1, batch + s1[-1:])
  x2 = util.broadcast_to_shape(x2, batch + s2[-2:])
  nb = len(batch)
  if s1[-1] != s2[-2]:
    raise ValueError(f"vecmat: the contracted axes must match, got operands of shapes "
                     f"{s1} and {s2}.")
  bd = tuple(range(nb))
  return _dot_general(x1, x2, (((nb,), (nb,)), (bd, bd)), None, pet, weak)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
  """Contract the last `axes` axes of a with the first of b, or the axis lists given."""
  a, b = asarray_args("tensordot", a, b)
  a_ndim, b_ndim = aval(a).ndim, aval(b).ndim
  pet, weak = _result_dtype("tensordot", preferred_element_type, a, b)
  if type(axes) is int:
    if axes > min(a_ndim, b_ndim):
      raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                      f"({aval(a).shape} and {aval(b).shape})")
    contracting = tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))
  elif isinstance(axes, (tuple, list)) and len(axes) == 2:
    ax1, ax2 = axes
    if isinstance(ax1, int) and isinstance(ax2, int):
      contracting = ((util.canonicalize_axis(ax1, a_ndim),),
                     (util.canonicalize_axis(ax2, b_ndim),))
    elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
      if len(ax1) != len(ax2):
        raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} "
                        f"and {ax2}.")
      contracting = (tuple(util.canonicalize_axis(i, a_ndim) for i in ax1),
                     tuple(util.canonicalize_axis(i, b_ndim) for i in ax2))
    else:
      raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or "
                      f"lists, got {ax1} and {ax2}")
  else:
    raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                    "lists/tuples of ints.")
  a_shape, b_shape = aval(a).shape, aval(b).shape
  for i, j in zip(*contracting):
    if a_shape[i] != b_shape[j]:
      raise TypeError(f"tensordot: contracting axis {i} of a (shape {a_shape}) has size "
                      f"{a_shape[i]} but axis {j} of b (shape {b_shape}) has size "
                      f"{b_shape[j]}.")
  return _dot_general(a, b, (contracting, ((), ())), precision, pet, weak)


def inner(a, b, *, precision=None, preferred_element_type=None):
  """Contract the last axes of a and b (scalars multiply)."""
  a, b = asarray_args("inner", a, b)
  if aval(a).ndim == 0 or aval(b).ndim == 0:
    if preferred_element_type is not None:
      a = convert_element_type(a, preferred_element_type)
      b = convert_element_type(b, preferred_element_type)
    return ufuncs.multiply(a, b)
  return tensordot(a, b, (-1, -1), precision=precision,
                   preferred_element_type=preferred_element_type)


def outer(a, b, out=None):
  """Outer product of the flattened arrays."""
  check_out("outer", out)
  a, b = util.promote_dtypes(*asarray_args("outer", a, b))
  return ufuncs.multiply(lax.expand_dims(_ravel(a), (1,)), lax.expand_dims(_ravel(b), (0,)))


@jit
def kron(a, b):
  """Kronecker product."""
  a, b = util.promote_dtypes(*asarray_args("kron", a, b))
  na, nb = aval(a).ndim, aval(b).ndim
  if na < nb:
    a = lax.expand_dims(a, tuple(range(nb - na)))
  elif nb < na:
    b = lax.expand_dims(b, tuple(range(na - nb)))
  nd = aval(a).ndim
  out_shape = tuple(int(i) * int(j) for i, j in zip(aval(a).shape, aval(b).shape))
  a = lax.expand_dims(a, tuple(range(1, 2 * nd, 2)))
  b = lax.expand_dims(b, tuple(range(0, 2 * nd, 2)))
  return lax.reshape(lax.mul(a, b), out_shape)


@partial(jit, static_argnames=("axisa", "axisb", "axisc", "axis"))
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """Cross product of 3-vectors along the given axes (broadcasting the rest)."""
  a, b = asarray_args("cross", a, b)
  if axis is not None:
    axisa = axisb = axisc = axis
  a, b = moveaxes(a, [axisa], [-1]), moveaxes(b, [axisb], [-1])
  if aval(a).shape[-1] != 3 or aval(b).shape[-1] != 3:
    raise ValueError(f"Dimension must be 3 for cross product; got vectors of sizes "
                     f"{aval(a).shape[-1]} and {aval(b).shape[-1]}")
  a0, a1, a2 = (lax.index_in_dim(a, i, -1, keepdims=False) for i in range(3))
  b0, b1, b2 = (lax.index_in_dim(b, i, -1, keepdims=False) for i in range(3))
  mul, sub = ufuncs.multiply, ufuncs.subtract
  comps = [sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
           sub(mul(a0, b1), mul(a1, b0))]
  c = lax.concatenate([lax.expand_dims(x, (0,)) for x in comps], 0)
  c = convert_element_type(c, aval(c).dtype)  # strong, as JAX's jnp.array stacking
  return moveaxes(c, [0], [axisc])
