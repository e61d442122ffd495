"""ember.numpy linear algebra: products (dot, matmul, tensordot, einsum, ...), trace and
diagonal, and the norms of ember.numpy.linalg.

Every product lowers to ONE `dot_general` with JAX's dimension numbers and
`preferred_element_type` (the promoted dtype; operands keep their own dtypes), then a
convert to the promoted dtype carrying the weak type, as jax/_src/numpy/tensor_contractions.py
does. einsum parses its subscripts here and contracts operands pairwise.

`__all__` lists the names of ember.numpy; `LINALG_ALL` those of ember.numpy.linalg.
Decompositions (cholesky, qr, eigh, svd, lu) come from ember/_src/primitives/decompositions.py;
det, slogdet, solve and inv go through LU, pinv, lstsq, matrix_rank, cond and the 2/-2/nuc
matrix norms through the SVD, as in JAX.
"""
from __future__ import annotations

import collections
import math
import operator
import string
from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.lax import linalg as lax_linalg
from ember._src.driver.jit import jit
from ember._src.library.numpy import creation, indexing, logic, sorting, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.reductions import asarray_arg, asarray_args, aval, check_out, moveaxes
from ember._src.library.numpy import reductions
from ember._src.primitives import decompositions
from ember._src.primitives.elementwise import convert_element_type

__all__ = ["dot", "matmul", "vdot", "vecdot", "inner", "outer", "tensordot", "einsum",
           "kron", "cross", "matvec", "vecmat"]
# ember.numpy.linalg reads these names from this module. matmul, tensordot, vecdot, outer
# and cross are the ember.numpy functions (their signatures accept the array-API calls);
# trace and diagonal here are the linalg versions (last two axes), so the ember.numpy
# versions (axes 0 and 1 by default) live in reductions.py.
LINALG_ALL = ["norm", "vector_norm", "matrix_norm", "matmul", "tensordot", "vecdot",
              "outer", "trace", "diagonal", "cross", "matrix_transpose",
              "cholesky", "qr", "eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals", "det",
              "slogdet", "solve", "inv", "pinv", "lstsq", "matrix_power", "matrix_rank", "cond",
              "EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult"]


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


# ---------------------------------------------------------------------------------------
# Products
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# einsum
# ---------------------------------------------------------------------------------------

_EINSUM_LETTERS = string.ascii_letters


def _sublist_to_str(sub) -> str:
  out = []
  for s in sub:
    if s is Ellipsis:
      out.append("...")
    else:
      s = operator.index(s)
      if not 0 <= s < 52:
        raise ValueError(f"einsum: subscript indices must be in [0, 52), got {s}")
      out.append(_EINSUM_LETTERS[s])
  return "".join(out)


def _interleaved_to_subscripts(args):
  """einsum(op0, sub0, op1, sub1, ..., [sub_out]) -> ('sub0,sub1->out', ops)."""
  args = list(args)
  out_sub = args.pop() if len(args) % 2 == 1 else None
  ops, subs = args[0::2], args[1::2]
  spec = ",".join(_sublist_to_str(s) for s in subs)
  if out_sub is not None:
    spec += "->" + _sublist_to_str(out_sub)
  return spec, ops


def _parse_einsum(spec: str, shapes):
  """Expand ellipses and check the subscripts: (input name strings, output names, size of
  every name). Ellipsis axes get fresh letters, aligned from the right across operands."""
  spec = spec.replace(" ", "")
  in_spec, arrow, out_spec = spec.partition("->")
  out_spec = out_spec if arrow else None
  for part, allowed in ((in_spec, ",."), (out_spec or "", ".")):
    for c in part:
      if not (c.isalpha() or c in allowed):
        raise ValueError(f"einsum: invalid character {c!r} in subscripts {spec!r}.")
  terms = in_spec.split(",")
  if len(terms) != len(shapes):
    raise ValueError(f"Number of einsum subscripts, {len(terms)}, must be equal to the "
                     f"number of operands, {len(shapes)}.")
  used = set(c for c in spec if c.isalpha())
  fresh = [c for c in _EINSUM_LETTERS + "".join(chr(i) for i in range(192, 592))
           if c not in used]
  n_ell = 0
  for i, (t, shape) in enumerate(zip(terms, shapes)):
    if "..." in t:
      if t.count("...") > 1 or "." in t.replace("...", "", 1):
        raise ValueError(f"einsum: invalid ellipsis in subscript {t!r}.")
      k = len(shape) - (len(t) - 3)
      if k < 0:
        raise ValueError(f"Einstein sum subscript {t!r} does not contain the correct number "
                         f"of indices for operand {i}.")
      n_ell = max(n_ell, k)
    elif "." in t:
      raise ValueError(f"einsum: invalid ellipsis in subscript {t!r}.")
  ell = "".join(fresh[:n_ell])
  names = []
  for i, (t, shape) in enumerate(zip(terms, shapes)):
    if "..." in t:
      k = len(shape) - (len(t) - 3)
      t = t.replace("...", ell[n_ell - k:] if k else "")
    if len(t) != len(shape):
      raise ValueError(f"Einstein sum subscript {t!r} does not contain the correct number "
                       f"of indices for operand {i}.")
    names.append(t)
  sizes: dict[str, int] = {}
  for i, (t, shape) in enumerate(zip(names, shapes)):
    for c, d in zip(t, shape):
      prev = sizes.get(c)
      if prev is None or prev == 1:
        sizes[c] = d
      elif d not in (1, prev):
        raise ValueError(f"Size of label '{c}' for operand {i} ({d}) does not match previous "
                         f"terms ({prev}).")
  if out_spec is None:
    counts = collections.Counter("".join(names))
    out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
  else:
    if "..." in out_spec:
      out_spec = out_spec.replace("...", ell, 1)
    elif "." in out_spec:
      raise ValueError(f"einsum: invalid ellipsis in output subscript {out_spec!r}.")
    out = out_spec
    for c in out:
      if c not in sizes:
        raise ValueError(f"Output character '{c}' did not appear in the input")
    if len(set(out)) != len(out):
      raise ValueError(f"einsum: output subscript {out_spec!r} repeats a character.")
  return names, out, sizes


def _kept_names(names, i, j, out) -> str:
  """Names of the result of contracting operands i and j: those still needed by the
  output or by another operand, in first-appearance order."""
  others = set(out).union(*(n for k, n in enumerate(names) if k not in (i, j)))
  return "".join(c for c in dict.fromkeys(names[i] + names[j]) if c in others)


def _einsum_path(names, out, sizes, optimize):
  """Pairwise contraction order as opt_einsum's (positions, contracted names, 'a,b->c')
  triples: greedily the pair whose result is smallest, or left to right when
  `optimize=False`. Contracted operands are removed and their result appended."""
  names = list(names)
  if len(names) == 1:
    return [((0,), frozenset(set(names[0]) - set(out)), f"{names[0]}->{out}")]
  steps = []
  while len(names) > 1:
    if len(names) == 2 or optimize is False:
      i, j = 0, 1
    else:
      pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
      # prefer pairs that share a name (a real contraction), then the smallest result
      i, j = min(pairs, key=lambda p: (not set(names[p[0]]) & set(names[p[1]]), math.prod(
          sizes[c] for c in _kept_names(names, *p, out))))
    res = out if len(names) == 2 else _kept_names(names, i, j, out)
    contracted = frozenset((set(names[i]) | set(names[j])) - set(res))
    steps.append(((i, j), contracted, f"{names[i]},{names[j]}->{res}"))
    names = [n for k, n in enumerate(names) if k not in (i, j)] + [res]
  return steps


def _removechars(s, chars):
  return s.translate(str.maketrans(dict.fromkeys(chars)))


def _einsum_contract(operands, contractions, precision, preferred_element_type):
  """JAX's `_einsum`: run the pairwise contractions with reduce_sum / select (repeated
  names: diagonals) / dot_general / transpose."""
  if preferred_element_type is None:
    pet, weak = dtypes.result_type(*operands, return_weak_type_flag=True)
  else:
    pet, weak = dtypes.check_user_dtype(preferred_element_type, "einsum"), False

  def sum_(x, axes):
    if dtypes.result_type(x, pet) != aval(x).dtype:
      x = convert_element_type(x, pet)
    axes = tuple(axes)
    return lax.reduce_or(x, axes) if aval(x).dtype == np.bool_ else lax.reduce_sum(x, axes)

  def sum_uniques(operand, names, uniques):
    if uniques:
      operand = sum_(operand, [names.index(n) for n in uniques])
      names = _removechars(names, uniques)
    return operand, names

  def sum_repeats(operand, names, counts, keep_names):
    for name, count in counts.items():
      if count > 1:
        axes = [i for i, n in enumerate(names) if n == name]
        shape = aval(operand).shape
        idx = [lax.broadcasted_iota(np.dtype(np.int32), shape, ax) for ax in axes]
        eye = idx[0] if len(idx) == 1 else None
        for other in idx[1:]:
          eq = lax.eq(idx[0], other)
          eye = eq if eye is None or eye is idx[0] else lax.bitwise_and(eye, eq)
        operand = lax.select(eye, operand, lax.full(shape, 0, aval(operand).dtype))
        if name not in keep_names:
          operand = sum_(operand, axes)
          names = names.replace(name, "")
        else:
          operand = sum_(operand, axes[:-1])
          names = names.replace(name, "", count - 1)
    return operand, names

  def filter_singleton_dims(operand, names, other_shape, other_names):
    shape = aval(operand).shape
    keep = [shape[i] != 1 or j == -1 or other_shape[j] == 1
            for i, j in enumerate(map(other_names.find, names))]
    squeeze = tuple(i for i, k in enumerate(keep) if not k)
    return lax.squeeze(operand, squeeze), "".join(n for n, k in zip(names, keep) if k)

  operands = list(operands)
  for operand_indices, contracted_set, einstr in contractions:
    contracted_names = sorted(contracted_set)
    input_str, result_names = einstr.split("->")
    input_names = input_str.split(",")
    if len(operand_indices) == 1:
      operand = operands.pop(operand_indices[0])
      names, = input_names
      counts = collections.Counter(names)
      operand, names = sum_uniques(operand, names,
                                   [n for n in contracted_names if counts[n] == 1])
      operand, names = sum_repeats(operand, names, counts, result_names)
    else:
      lhs, rhs = (operands[i] for i in operand_indices)
      operands = [o for k, o in enumerate(operands) if k not in operand_indices]
      lhs_names, rhs_names = input_names
      lhs, lhs_names = filter_singleton_dims(lhs, lhs_names, aval(rhs).shape, rhs_names)
      rhs, rhs_names = filter_singleton_dims(rhs, rhs_names, aval(lhs).shape, lhs_names)
      lhs_counts, rhs_counts = collections.Counter(lhs_names), collections.Counter(rhs_names)
      lhs, lhs_names = sum_uniques(lhs, lhs_names, [
          n for n in contracted_names if lhs_counts[n] == 1 and rhs_counts[n] == 0])
      rhs, rhs_names = sum_uniques(rhs, rhs_names, [
          n for n in contracted_names if rhs_counts[n] == 1 and lhs_counts[n] == 0])
      lhs, lhs_names = sum_repeats(lhs, lhs_names, lhs_counts, result_names + rhs_names)
      rhs, rhs_names = sum_repeats(rhs, rhs_names, rhs_counts, result_names + lhs_names)
      both = set(lhs_names) & set(rhs_names)
      contracted_names = [n for n in contracted_names if n in both]
      batch_names = "".join(n for n in result_names if n in both)
      lhs_batch = tuple(lhs_names.find(n) for n in batch_names)
      rhs_batch = tuple(rhs_names.find(n) for n in batch_names)
      lhs_cont = tuple(lhs_names.index(n) for n in contracted_names)
      rhs_cont = tuple(rhs_names.index(n) for n in contracted_names)
      deleted = batch_names + "".join(contracted_names)
      rem_lhs, rem_rhs = _removechars(lhs_names, deleted), _removechars(rhs_names, deleted)
      names = batch_names + rem_rhs + rem_lhs
      if names == result_names:
        operand = lax.dot_general(rhs, lhs, ((rhs_cont, lhs_cont), (rhs_batch, lhs_batch)),
                                  precision=precision, preferred_element_type=pet)
      else:
        names = batch_names + rem_lhs + rem_rhs
        operand = lax.dot_general(lhs, rhs, ((lhs_cont, rhs_cont), (lhs_batch, rhs_batch)),
                                  precision=precision, preferred_element_type=pet)
    if names != result_names:
      operand = lax.transpose(operand, tuple(names.index(n) for n in result_names))
    operands.append(operand)
  return convert_element_type(operands[0], pet, weak)


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None, out_sharding=None):
  """Einstein summation: 'ij,jk->ik' subscripts (with '...' ellipses and implicit output)
  or the interleaved (op, sublist, ...) form. `optimize` picks the pairwise order: False
  contracts left to right; anything else greedily (smallest intermediate first)."""
  check_out("einsum", out)
  if isinstance(subscripts, str):
    spec, ops = subscripts, list(operands)
  else:
    spec, ops = _interleaved_to_subscripts((subscripts,) + operands)
  ops = asarray_args("einsum", *ops)
  if not ops:
    raise ValueError("einsum: at least one operand is required.")
  names, out_names, sizes = _parse_einsum(spec, [aval(o).shape for o in ops])
  contractions = _einsum_path(names, out_names, sizes, optimize)
  return _einsum_contract(ops, contractions, precision, preferred_element_type)


# ---------------------------------------------------------------------------------------
# ember.numpy.linalg
# ---------------------------------------------------------------------------------------


def _abs2(x):
  """|x|^2 elementwise, real-valued."""
  if dtypes.is_complex(aval(x).dtype):
    return lax.real(lax.mul(x, lax.conj(x)))
  return lax.mul(x, x)




@partial(jit, static_argnames=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims=False):
  """Vector norms (one axis, or all axes with ord=None) and matrix norms (two axes)."""
  x, = util.promote_dtypes_inexact(asarray_arg("jnp.linalg.norm", x))
  ndim = aval(x).ndim
  if axis is None:
    if ord is None:
      return lax.sqrt(reductions.sum(_abs2(x), keepdims=keepdims))
    axis = tuple(range(ndim))
  elif isinstance(axis, tuple):
    axis = tuple(util.canonicalize_axis(a, ndim) for a in axis)
  else:
    axis = (util.canonicalize_axis(axis, ndim),)
  if len(axis) == 1:
    return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
  if len(axis) != 2:
    raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                     "compute a vector-norm, or two axes to compute a matrix-norm.")
  row_axis, col_axis = axis
  amax, amin, sum_ = reductions.max, reductions.min, reductions.sum
  if ord is None or (isinstance(ord, str) and ord in ("f", "fro")):
    return lax.sqrt(sum_(_abs2(x), axis=axis, keepdims=keepdims))
  if isinstance(ord, str):
    if ord == "nuc":
      return _svd_norm(x, ord, axis, keepdims)
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")
  if ord in (1, -1):
    if not keepdims and col_axis > row_axis:
      col_axis -= 1
    col_sums = sum_(lax.abs(x), axis=row_axis, keepdims=keepdims)
    return (amax(col_sums, axis=col_axis, keepdims=keepdims, initial=0) if ord == 1
            else amin(col_sums, axis=col_axis, keepdims=keepdims))
  if ord in (np.inf, -np.inf):
    if not keepdims and row_axis > col_axis:
      row_axis -= 1
    row_sums = sum_(lax.abs(x), axis=col_axis, keepdims=keepdims)
    return (amax(row_sums, axis=row_axis, keepdims=keepdims, initial=0) if ord == np.inf
            else amin(row_sums, axis=row_axis, keepdims=keepdims))
  if ord in (2, -2):
    return _svd_norm(x, ord, axis, keepdims)
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """sum(|x|**ord)**(1/ord) over `axis` (all axes when None); also ord=inf, -inf, 0.
  Written with the ember.numpy ufuncs, as JAX does, so integer inputs follow their rules
  (ord=2 gives a float, ord=1 keeps the integer dtype)."""
  x = asarray_arg("jnp.linalg.vector_norm", x)
  amax, amin, sum_ = reductions.max, reductions.min, reductions.sum
  if isinstance(ord, str):
    msg = f"Invalid order '{ord}' for vector norm."
    if ord in ("inf", "-inf"):
      msg += f"Use '{ord[:-3]}jax.numpy.inf' instead."
    raise ValueError(msg)
  if ord is None or ord == 2:
    return ufuncs.sqrt(sum_(ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x))), axis=axis,
                            keepdims=keepdims))
  if ord == np.inf:
    return amax(ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return amin(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  if ord == 0:
    real_dtype = np.array(0, util.to_inexact_dtype(aval(x).dtype)).real.dtype
    return sum_(lax.ne(x, convert_element_type(0, aval(x).dtype)), dtype=real_dtype,
                axis=axis, keepdims=keepdims)
  if ord == 1:
    return sum_(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  abs_x = ufuncs.abs(x)
  dt = aval(abs_x).dtype
  out = sum_(ufuncs.power(abs_x, np.array(ord, dt)), axis=axis, keepdims=keepdims)
  return ufuncs.power(out, np.array(1. / ord, dt))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  """Norm of the matrices in the last two axes."""
  x = asarray_arg("jnp.linalg.matrix_norm", x)
  return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def trace(x, /, *, offset=0, dtype=None):
  """Trace of the matrices in the last two axes (jnp.linalg.trace)."""
  return reductions.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
  """Diagonals of the matrices in the last two axes (jnp.linalg.diagonal)."""
  return reductions.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def matrix_transpose(x, /):
  """Swap the last two axes."""
  x = asarray_arg("jnp.linalg.matrix_transpose", x)
  ndim = aval(x).ndim
  if ndim < 2:
    raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={ndim}")
  return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


# ---------------------------------------------------------------------------------------
# Decompositions and the functions built on them (jax/_src/numpy/linalg.py), on the
# primitives of ember/_src/primitives/decompositions.py
# ---------------------------------------------------------------------------------------

class EigResult(collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])):
  __slots__ = ()


class EighResult(collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])):
  __slots__ = ()


class QRResult(collections.namedtuple("QRResult", ["Q", "R"])):
  __slots__ = ()


class SVDResult(collections.namedtuple("SVDResult", ["U", "S", "Vh"])):
  __slots__ = ()


class SlogdetResult(collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])):
  __slots__ = ()


def _inexact_arg(fun_name, a):
  a, = util.promote_dtypes_inexact(asarray_arg(f"jnp.linalg.{fun_name}", a))
  return a


def _square_arg(fun_name, a, label=None):
  """a as an inexact array of shape [..., n, n] (JAX's message names `label`)."""
  a = _inexact_arg(fun_name, a)
  shape = aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to {label or fun_name} must have shape [..., n, n], got "
                     f"{shape}.")
  return a


def _H(x):
  return lax.conj(matrix_transpose(x)) if dtypes.is_complex(aval(x).dtype) else \
      matrix_transpose(x)


@partial(jit, static_argnames=("upper", "symmetrize_input"))
def cholesky(a, *, upper=False, symmetrize_input=True):
  """The Cholesky factor of Hermitian positive-definite matrices: L (a = L L^H), or U =
  L^H with upper=True; NaN where a is not positive definite."""
  a = _square_arg("cholesky", a, "linalg.cholesky")
  L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(L) if upper else L


@partial(jit, static_argnames=("mode",))
def qr(a, mode="reduced"):
  """QRResult(Q, R) (mode 'reduced' or 'complete'), or R alone (mode 'r')."""
  a = _inexact_arg("qr", a)
  if mode not in ("reduced", "complete", "r"):
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'" +
                     (": ember does not provide mode='raw'" if mode == "raw" else ""))
  q, r = decompositions.qr(a, full_matrices=mode == "complete")
  return r if mode == "r" else QRResult(q, r)


@partial(jit, static_argnames=("UPLO", "symmetrize_input"))
def eigh(a, UPLO=None, symmetrize_input=True):
  """EighResult(eigenvalues ascending, eigenvectors as columns) of Hermitian matrices."""
  a = _square_arg("eigh", a, "linalg.eigh")
  if UPLO is None or UPLO == "L":
    lower = True
  elif UPLO == "U":
    lower = False
  else:
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


@jit
def eig(a):
  """EigResult(eigenvalues, right eigenvectors as unit columns) of general square
  matrices, complex. Only the eigenvalues can be differentiated (as JAX by default)."""
  a = _square_arg("eig", a, "linalg.eig")
  w, v = decompositions.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


@jit
def eigvals(a):
  """The (complex) eigenvalues of general square matrices."""
  a = _square_arg("eigvals", a, "linalg.eig")
  return decompositions.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


@partial(jit, static_argnames=("UPLO", "symmetrize_input"))
def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
  """The ascending eigenvalues of Hermitian matrices."""
  return eigh(a, UPLO, symmetrize_input).eigenvalues


@partial(jit, static_argnames=("full_matrices", "compute_uv", "hermitian", "subset_by_index"))
def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
  """SVDResult(U, S descending, Vh) with a = U diag(S) Vh, or S alone."""
  a = _inexact_arg("svd", a)
  if hermitian:   # JAX's route: eigh, |w| descending, the eigenvalues' signs in Vh
    w, v = eigh(a)
    order = sorting.argsort(-lax.abs(w), axis=-1)
    s = indexing.take_along_axis(lax.abs(w), order, axis=-1)
    if not compute_uv:
      return s
    sign = indexing.take_along_axis(ufuncs.sign(w), order, axis=-1)
    u = indexing.take_along_axis(v, order[..., None, :], axis=-1)
    vh = _H(u * sign[..., None, :].astype(u.dtype))
    return SVDResult(u, s, vh)
  out = decompositions.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                   subset_by_index=subset_by_index)
  return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
  """The singular values, descending."""
  return svd(x, compute_uv=False)


def _lu_factor(a):
  return decompositions.lu(a)


@jit
def slogdet(a, *, method=None):
  """SlogdetResult(sign, log|det|) through an LU factorization."""
  if method not in (None, "lu"):
    raise ValueError(f"Unknown slogdet method '{method}'. ember supports 'lu'.")
  a = _square_arg("slogdet", a, "slogdet()")
  n = aval(a).shape[-1]
  lu_, pivot, _ = _lu_factor(a)
  diag = reductions.diagonal(lu_, axis1=-2, axis2=-1)
  is_zero = reductions.any(diag == 0, axis=-1)
  parity = reductions.count_nonzero(pivot != creation.arange(n, dtype=pivot.dtype), axis=-1)
  if dtypes.is_complex(aval(a).dtype):
    unit = diag / lax.convert_element_type(ufuncs.abs(diag), aval(diag).dtype)
    sign = reductions.prod(unit, axis=-1)
  else:
    sign = creation.array(1, aval(a).dtype)
    parity = parity + reductions.count_nonzero(diag < 0, axis=-1)
  sign = logic.where(is_zero, creation.array(0, aval(a).dtype),
                     sign * creation.array(-2 * (parity % 2) + 1, aval(a).dtype))
  logdet = logic.where(is_zero, creation.array(-np.inf, ufuncs.real(diag).dtype),
                       reductions.sum(ufuncs.log(ufuncs.abs(diag)), axis=-1))
  return SlogdetResult(sign, ufuncs.real(logdet))


@jit
def det(a):
  """The determinant: sign * exp(log|det|) of an LU factorization (0 when singular)."""
  a = _square_arg("det", a, "_det()")
  n = aval(a).shape[-1]
  lu_, pivot, _ = _lu_factor(a)
  diag = reductions.diagonal(lu_, axis1=-2, axis2=-1)
  parity = reductions.count_nonzero(pivot != creation.arange(n, dtype=pivot.dtype), axis=-1)
  sign = creation.array(-2 * (parity % 2) + 1, aval(a).dtype)
  return sign * reductions.prod(diag, axis=-1)


def _lu_solve(lu_, perm, b):
  """x with a x = b for b [..., n, k], from a's LU factors (batch dims equal)."""
  x = indexing.take_along_axis(b, perm[..., :, None], axis=-2)
  x = decompositions.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
  return decompositions.triangular_solve(lu_, x, left_side=True, lower=False)


@jit
def solve(a, b):
  """x with a @ x = b: b of shape [..., n] (one vector) when 1-D, else [..., n, k] with
  batch dims broadcast against a's."""
  a = _square_arg("solve", a, "solve")
  b = asarray_arg("jnp.linalg.solve", b)
  a, b = util.promote_dtypes_inexact(a, b)
  ash, bsh = aval(a).shape, aval(b).shape
  n = ash[-1]
  if len(bsh) == 1:
    if bsh[0] != n:
      raise ValueError(f"solve: inconsistent size for core dimension 'm': {bsh[0]} vs {n} "
                       f"on signature '(m,m),(m)->(m)'")
    batch = ash[:-2]
    b2 = shape_ops.broadcast_to(b[:, None], batch + (n, 1))
    lu_, _, perm = _lu_factor(a)
    return _lu_solve(lu_, perm, b2)[..., 0]
  if bsh[-2] != n:
    raise ValueError(f"Invalid shapes for solve: {ash}, {bsh}. b must have shape [..., n] "
                     f"or [..., n, k] for a of shape [..., n, n]; to solve for a batch of "
                     f"vectors use solve(a, b[..., None])[..., 0].")
  batch = util.broadcast_shapes(ash[:-2], bsh[:-2])
  a = shape_ops.broadcast_to(a, batch + ash[-2:])
  b = shape_ops.broadcast_to(b, batch + bsh[-2:])
  lu_, _, perm = _lu_factor(a)
  return _lu_solve(lu_, perm, b)


@jit
def inv(a):
  """The inverse of square matrices (solve against the identity)."""
  a = _square_arg("inv", a, "inv")
  shape = aval(a).shape
  eye = shape_ops.broadcast_to(creation.eye(shape[-1], dtype=aval(a).dtype), shape)
  return solve(a, eye)


@partial(jit, static_argnames=("hermitian",))
def pinv(a, rtol=None, hermitian=False, *, rcond=None):
  """The Moore-Penrose pseudo-inverse through the SVD; singular values at or below
  rtol * max(s) (default 10 * max(m, n) * eps) are treated as zero."""
  a = _inexact_arg("pinv", a)
  if rcond is not None:
    rtol = rcond
  m, n = aval(a).shape[-2:]
  dt = aval(a).dtype
  if rtol is None:
    rtol = 10. * max(m, n) * float(np.finfo(np.empty(0, dt).real.dtype).eps)
  rtol = creation.asarray(rtol)
  if m == 0 or n == 0:
    return creation.zeros(aval(a).shape[:-2] + (n, m), dt)
  u, s, vh = svd(ufuncs.conj(a), full_matrices=False, hermitian=hermitian)
  cutoff = rtol[..., None] * reductions.max(s, axis=-1, keepdims=True, initial=-np.inf)
  s = logic.where(s > cutoff, s, np.inf).astype(u.dtype)
  return matmul(matrix_transpose(vh), matrix_transpose(u) / s[..., :, None])


@partial(jit, static_argnames=("numpy_resid",))
def lstsq(a, b, rcond=None, *, numpy_resid=False):
  """(x, residuals, rank, s): the least-squares solution of a @ x = b through the SVD."""
  a = asarray_arg("jnp.linalg.lstsq", a)
  b = asarray_arg("jnp.linalg.lstsq", b)
  a, b = util.promote_dtypes_inexact(a, b)
  ash, bsh = aval(a).shape, aval(b).shape
  if len(ash) != 2:
    raise TypeError(f"{len(ash)}-dimensional array given. Array must be two-dimensional")
  b_orig_ndim = len(bsh)
  if b_orig_ndim == 1:
    b = b[:, None]
  if len(aval(b).shape) != 2:
    raise TypeError(f"{len(bsh)}-dimensional array given. Array must be one or "
                    "two-dimensional")
  m, n = ash
  if m != aval(b).shape[0]:
    raise ValueError("Leading dimensions of input arrays must match")
  dt = aval(a).dtype
  eps = float(np.finfo(np.empty(0, dt).real.dtype).eps)
  if rcond is None:
    rcond = eps * max(n, m)
  else:
    rcond = logic.where(rcond < 0, eps, rcond)
  u, s, vt = svd(a, full_matrices=False)
  mask = s >= creation.array(rcond, dtype=s.dtype) * s[0]
  rank = mask.sum()
  safe_s = logic.where(mask, s, 1).astype(dt)
  s_inv = logic.where(mask, 1 / safe_s, 0)[:, None]
  uTb = matmul(_H(u), b)
  x = matmul(_H(vt), s_inv * uTb)
  if numpy_resid and (rank < n or m <= n):
    resid = creation.asarray([])
  else:
    b_estimate = matmul(a, x)
    resid = vector_norm(b - b_estimate, axis=0) ** 2
  if b_orig_ndim == 1:
    x = x.ravel()
  return x, resid, rank, s


def matrix_power(a, n):
  """a @ a @ ... @ a (n times; the inverse's powers for n < 0; the identity for 0) by
  repeated squaring."""
  a = asarray_arg("jnp.linalg.matrix_power", a)
  shape = aval(a).shape
  if len(shape) < 2:
    raise TypeError(f"{len(shape)}-dimensional array given. Array must be at least "
                    "two-dimensional")
  if shape[-2] != shape[-1]:
    raise TypeError("Last 2 dimensions of the array must be square")
  try:
    n = operator.index(n)
  except TypeError as err:
    raise TypeError(f"exponent must be an integer, got {n}") from err
  if n == 0:
    return shape_ops.broadcast_to(creation.eye(shape[-1], dtype=aval(a).dtype), shape)
  if n < 0:
    a, n = inv(a), -n
  result = None
  while n > 0:
    if n & 1:
      result = a if result is None else matmul(result, a)
    n >>= 1
    if n:
      a = matmul(a, a)
  return result


@jit
def matrix_rank(M, rtol=None, *, tol=None):
  """The number of singular values above rtol * max(s) (default max(m, n) * eps); a 1-D
  input has rank 1 unless it is all zeros."""
  M = _inexact_arg("matrix_rank", M)
  if tol is not None:
    rtol = tol
  shape = aval(M).shape
  if len(shape) < 2:
    return reductions.any(M != 0).astype(np.int32)
  s = svd(M, full_matrices=False, compute_uv=False)
  if rtol is None:
    rtol = reductions.max(s, axis=-1, keepdims=True) * (
        max(shape[-2:]) * float(np.finfo(aval(s).dtype).eps))
  else:
    rtol = shape_ops.expand_dims(creation.asarray(rtol), -1)
  return reductions.sum(s > rtol, axis=-1, dtype=np.int32)


def cond(x, p=None):
  """The condition number in norm `p` (None/2/-2: ratio of singular values)."""
  x = _inexact_arg("cond", x)
  shape = aval(x).shape
  if len(shape) < 2:
    raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                     f"arr.shape={shape}")
  if p is None or p == 2:
    s = svdvals(x)
    return s[..., 0] / s[..., -1]
  if p == -2:
    s = svdvals(x)
    r = s[..., -1] / s[..., 0]
  else:
    if shape[-2] != shape[-1]:
      raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got "
                       f"x.shape={shape}")
    r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
  # NaNs from singular matrices become inf, as NumPy and JAX do
  return logic.where(ufuncs.isnan(r) & ~ufuncs.isnan(x).any(axis=(-2, -1)), np.inf, r)


def _svd_norm(x, ord, axis, keepdims):
  """Matrix norms from singular values: 2 (largest), -2 (smallest), 'nuc' (sum)."""
  row, col = axis
  nd = aval(x).ndim
  y = shape_ops.moveaxis(x, (row, col), (nd - 2, nd - 1))
  s = svd(y, compute_uv=False)
  out = (reductions.max(s, axis=-1) if ord == 2 else reductions.min(s, axis=-1) if ord == -2
         else reductions.sum(s, axis=-1))
  if keepdims:
    out = shape_ops.expand_dims(out, tuple(sorted((row, col))))
  return out
