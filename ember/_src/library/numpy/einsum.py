"""ember.numpy's einsum, as JAX's (jax/_src/numpy/einsum.py): the subscripts ('ij,jk->ik'
with '...' ellipses and an implicit output, or the interleaved (operand, sublist, ...) form)
are parsed and checked here, a pairwise contraction order is chosen (opt_einsum's greedy
order, or left to right with optimize=False), and each pair is contracted with reduce_sum /
select (repeated names: diagonals) / dot_general / transpose.
"""
from __future__ import annotations

import collections
import math
import operator
import string

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy.reductions import asarray_args, aval, check_out
from ember._src.primitives.elementwise import convert_element_type

__all__ = ["einsum", "einsum_path"]


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
  # any character but ',', '.' and one '->' is a label, as opt_einsum's parser (JAX's)
  # takes it: flax's attention writes '...kh1d'
  if ("-" in spec or ">" in spec) and \
      (spec.count("-") > 1 or spec.count(">") > 1 or spec.count("->") != 1):
    raise ValueError("Subscripts can only contain one '->'.")
  terms = in_spec.split(",")
  if len(terms) != len(shapes):
    raise ValueError(f"Number of einsum subscripts, {len(terms)}, must be equal to the "
                     f"number of operands, {len(shapes)}.")
  used = set(spec) - set(",->.")
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


def einsum_path(subscripts, /, *operands, optimize="auto"):
  """(path, description): the pairwise contraction order einsum uses for these operands,
  as a list of operand-position tuples (opt_einsum's format; contracted operands leave the
  list and their result goes last), and a text description of each step. JAX returns
  opt_einsum's PathInfo object as the second item; here it is a string. An explicit path
  passed as `optimize` comes back as given."""
  if isinstance(subscripts, str):
    spec, ops = subscripts, operands
  else:
    spec, ops = _interleaved_to_subscripts((subscripts,) + operands)
  shapes = [np.shape(o) for o in ops]
  names, out_names, sizes = _parse_einsum(spec, shapes)
  if isinstance(optimize, (list, tuple)):
    path = [tuple(p) for p in optimize if p != "einsum_path"]
    return path, f"  Complete contraction:  {','.join(names)}->{out_names}\n  (explicit path)"
  steps = _einsum_path(names, out_names, sizes, optimize)
  lines = [f"  Complete contraction:  {','.join(names)}->{out_names}"]
  lines += [f"  step {k}: operands {pos}: {eq}" for k, (pos, _, eq) in enumerate(steps)]
  return [pos for pos, _, _ in steps], "\n".join(lines)
