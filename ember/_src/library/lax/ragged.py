"""Grouped ("ragged") and block-scaled matrix products: `ragged_dot`, `ragged_dot_general`
and their `RaggedDotDimensionNumbers`, with JAX's three modes; `scaled_dot`, XLA's
decomposition of a dot of operands scaled per block of the contracting dimension
(operands and scales rounded to bfloat16 and multiplied, then one dot_general).

Ragged products: Written as JAX's reference
decomposition: the ragged operand is expanded to a dense one with a leading group dimension,
each group's rows masked to its slice (group g covers [sum(sizes[:g]), sum(sizes[:g+1]))),
then one dot_general contracts (or batches over) the groups. Derivatives, vmap and jit follow
from the lax operations."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general", "scaled_dot"]


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
  """Dot dimension numbers `((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`, the
  lhs ragged dimension (one) and the rhs group dimensions (at most one)."""
  dot_dimension_numbers: tuple
  lhs_ragged_dimensions: tuple
  rhs_group_dimensions: tuple

  def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
    object.__setattr__(self, "dot_dimension_numbers",
                       tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


def _remaining(n, *used):
  used = set().union(*map(set, used))
  return [d for d in range(n) if d not in used]


def _mode(lhs_rank, dnums):
  if len(dnums.lhs_ragged_dimensions) != 1:
    raise TypeError(f"ragged_dot_general requires exactly one lhs ragged dimension, got "
                    f"{dnums.lhs_ragged_dimensions}")
  ragged = dnums.lhs_ragged_dimensions[0]
  (contract, _), (batch, _) = dnums.dot_dimension_numbers
  if ragged in _remaining(lhs_rank, contract, batch):
    return "noncontracting", ragged
  if ragged in contract:
    return "contracting", ragged
  if ragged in batch:
    return "batch", ragged
  raise TypeError(f"lhs_ragged_dim {ragged} is not a dimension of lhs (rank {lhs_rank})")


def _prefix(mode, rank, ragged, batch, contract):
  """The operand's dimensions that index group_sizes before its group axis."""
  batch, contract = list(batch), list(contract)
  if mode == "noncontracting":
    free = _remaining(rank, contract, batch)
    return batch + free[:free.index(ragged)]
  if mode == "contracting":
    return batch + contract[:contract.index(ragged)]
  return batch[:batch.index(ragged)]


def _expand(x, dim, sizes, prefix):
  """x with a new leading group axis, group g keeping only its slice of `dim` (zeros
  elsewhere). `sizes`: [*x.shape[prefix], g]."""
  shape = core.get_aval(x).shape
  g = core.get_aval(sizes).shape[-1]
  ends = lax.cumsum(sizes, axis=len(prefix))
  starts = lax.sub(ends, sizes)
  mshape = (g,) + tuple(shape[p] for p in prefix) + (shape[dim],)
  perm = (len(prefix),) + tuple(range(len(prefix)))     # group axis first
  bounds = [lax.broadcast_in_dim(lax.transpose(b, perm), mshape, tuple(range(len(mshape) - 1)))
            for b in (starts, ends)]
  iota = lax.broadcasted_iota(core.get_aval(sizes).dtype, mshape, len(mshape) - 1)
  mask = lax.bitwise_and(lax.le(bounds[0], iota), lax.lt(iota, bounds[1]))
  full = (g,) + shape
  order = [0] + [p + 1 for p in prefix] + [dim + 1]
  sort = np.argsort(order)
  mask = lax.transpose(mask, tuple(int(i) for i in sort))
  mask = lax.broadcast_in_dim(mask, full, tuple(sorted(order)))
  xb = lax.broadcast_in_dim(x, full, tuple(range(1, len(full))))
  return lax.select(mask, xb, lax.full_like(xb, 0))


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None, *,
                       reduction_order=None):
  """The ragged product (JAX's modes): 1. lhs ragged in a non-contracting dimension m: row
  block g of lhs times rhs's group g ([b,m,k] x [g,b,k,n] -> [b,m,n]); 2. ragged in a
  contracting dimension: one product per group ([b,m,k] x [b,k,n] -> [g,b,m,n]); 3. ragged in
  a batch dimension: the plain dot_general."""
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  dnums = ragged_dot_dimension_numbers
  if not isinstance(dnums, RaggedDotDimensionNumbers):
    raise TypeError(f"ragged_dot_general: ragged_dot_dimension_numbers must be a "
                    f"RaggedDotDimensionNumbers, got {dnums!r}")
  sizes_aval = core.get_aval(group_sizes)
  if sizes_aval.dtype.kind not in "iu":
    raise TypeError(f"ragged_dot_general: group_sizes must have an integer dtype, got "
                    f"{sizes_aval.dtype}")
  lhs_rank = core.get_aval(lhs).ndim
  mode, ragged = _mode(lhs_rank, dnums)
  (l_contract, r_contract), (l_batch, r_batch) = dnums.dot_dimension_numbers
  l_prefix = _prefix(mode, lhs_rank, ragged, l_batch, l_contract)
  lshape = core.get_aval(lhs).shape
  if sizes_aval.ndim == 1:
    group_sizes = lax.broadcast(group_sizes, [lshape[i] for i in l_prefix])
  dot = lambda a, b, dn: lax.dot_general(a, b, dn, precision=precision,
                                         preferred_element_type=preferred_element_type)
  inc = lambda dims: [d + 1 for d in dims]
  if mode == "noncontracting":
    if len(dnums.rhs_group_dimensions) != 1:
      raise TypeError("ragged_dot_general: a ragged non-contracting dimension needs one rhs "
                      f"group dimension, got {dnums.rhs_group_dimensions}")
    g_dim = dnums.rhs_group_dimensions[0]
    rhs_g = core.get_aval(rhs).shape[g_dim]
    if rhs_g != core.get_aval(group_sizes).shape[-1]:
      raise TypeError(f"ragged_dot_general: rhs group dimension size {rhs_g} does not match "
                      f"the number of groups {core.get_aval(group_sizes).shape[-1]}")
    return dot(_expand(lhs, ragged, group_sizes, l_prefix), rhs,
               ((inc(l_contract) + [0], list(r_contract) + [g_dim]),
                (inc(l_batch), list(r_batch))))
  if mode == "contracting":
    r_ragged = r_contract[list(l_contract).index(ragged)]
    r_prefix = _prefix(mode, core.get_aval(rhs).ndim, r_ragged, r_batch, r_contract)
    return dot(_expand(lhs, ragged, group_sizes, l_prefix),
               _expand(rhs, r_ragged, group_sizes, r_prefix),
               ((inc(l_contract), inc(r_contract)), ([0] + inc(l_batch), [0] + inc(r_batch))))
  return dot(lhs, rhs, dnums.dot_dimension_numbers)


_RAGGED_DOT_DNUMS = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None, *, reduction_order=None):
  """[m, k] x [g, k, n] -> [m, n]: rows sum(sizes[:i]) .. sum(sizes[:i+1]) of lhs times
  rhs[i]; rows past sum(sizes) are zero."""
  for name, x, rank in (("lhs", lhs, 2), ("rhs", rhs, 3), ("group_sizes", group_sizes, 1)):
    if core.get_aval(x).ndim != rank:
      raise TypeError(f"ragged_dot: expected {name} of rank {rank}, got shape "
                      f"{core.get_aval(x).shape}")
  return ragged_dot_general(lhs, rhs, group_sizes, _RAGGED_DOT_DNUMS, precision=precision,
                            preferred_element_type=preferred_element_type,
                            group_offset=group_offset)


def _check_scaled_dot(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  avals = [core.get_aval(x) for x in (lhs, rhs, lhs_scale, rhs_scale) if x is not None]
  if len({a.ndim for a in avals}) > 1:
    raise TypeError(f"All input tensors must have the same rank. Got ranks "
                    f"{[a.ndim for a in avals]}.")
  if len(lb) != len(rb) or len(lc) != len(rc):
    raise TypeError("LHS and RHS must have the same number of batch and contracting "
                    f"dimensions, got {dimension_numbers}.")
  ls, rs = core.get_aval(lhs).shape, core.get_aval(rhs).shape
  for i, j in zip(lc, rc):
    if ls[i] != rs[j]:
      raise TypeError(f"LHS contracting dim {i} of size {ls[i]} does not match RHS "
                      f"contracting dim {j} of size {rs[j]}.")
  for name, x, scale, contract in (("LHS", lhs, lhs_scale, lc), ("RHS", rhs, rhs_scale, rc)):
    if scale is None:
      continue
    xs, ss = core.get_aval(x).shape, core.get_aval(scale).shape
    for d, (n, m) in enumerate(zip(xs, ss)):
      if (d in contract and (m == 0 or n % m)) or (d not in contract and n != m):
        raise TypeError(f"{name} scale shape {ss} does not fit operand shape {xs}: "
                        f"contracting sizes must divide, other sizes must match.")


def _blocks_expanded(scale, shape, contract):
  """The scale repeated over each block of the contracting dimensions (a subchannel)."""
  for d in contract:
    n, m = shape[d], core.get_aval(scale).shape[d]
    if n != m:
      sshape = core.get_aval(scale).shape
      wide = sshape[:d + 1] + (n // m,) + sshape[d + 1:]
      scale = lax.broadcast_in_dim(scale, wide, tuple(i for i in range(len(wide))
                                                      if i != d + 1))
      scale = lax.reshape(scale, sshape[:d] + (n,) + sshape[d + 1:])
  return scale


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
  """(lhs * lhs_scale) @ (rhs * rhs_scale) in `preferred_element_type` (bfloat16 by
  default); a scale's contracting size divides its operand's (one scale per block)."""
  ndim = core.get_aval(lhs).ndim
  if dimension_numbers is None:
    if ndim < 2:
      raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
    batch = tuple(range(ndim - 2))
    dimension_numbers = (((ndim - 1,), (ndim - 2,)), (batch, batch))
  _check_scaled_dot(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers)
  (lc, rc), _ = dimension_numbers
  bf16 = np.dtype(dtypes.bfloat16)

  def scaled(x, scale, contract):
    x = lax.convert_element_type(x, bf16)
    if scale is None:
      return x
    scale = _blocks_expanded(scale, core.get_aval(x).shape, contract)
    return lax.mul(x, lax.convert_element_type(scale, bf16))
  out_dtype = bf16 if preferred_element_type is None else dtypes.check_user_dtype(
      preferred_element_type, "scaled_dot")
  return lax.dot_general(scaled(lhs, lhs_scale, lc), scaled(rhs, rhs_scale, rc),
                         dimension_numbers, preferred_element_type=out_dtype)
