"""Scans as XLA:CPU computes them: the NumPy definition of a reduce-window whose window spans
one whole axis (cumsum, cumprod, cumlogsumexp; hlo.scan_window) with a combine whose
grouping changes the result (float add, multiply, ...).

XLA:CPU's ReduceWindowRewriter (base length BASE) rewrites such a scan of length n > BASE
into blocks: pad the axis with the init to a multiple of BASE, scan each block of BASE,
scan the block totals (the last element of each block; the first when reversed), itself
rewritten the same way while longer than BASE, and combine each block's elements with the
total of the blocks before it (after it when reversed). A window of at most BASE elements
is folded in window order: the init, then the elements from the window's start. For a
forward scan output i folds x[0], ..., x[i]; for a reverse scan output i folds x[i],
x[i + 1], ..., x[n - 1] (left to right, not from the end). Every combine rounds to the
operand's dtype: a bfloat16 sum rounds at each step, as XLA's reducer (an f32 add converted
back to bfloat16) does.

The init is the combine's identity (0 for sums: +0.0, as JAX's, so a sum of -0.0 is +0.0;
1 for products; -inf for logaddexp): folding the padding (more inits) changes nothing, so
it is left out. The primitives' reference implementations, the HLO evaluator and the
scan_expansion pass (which emits the same blocks for the CPU backend) share this definition.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

BASE = 16   # XLA:CPU's ReduceWindowRewriter base length


def xla_scan(x: np.ndarray, axis: int, reverse: bool, combine: Callable, init) -> np.ndarray:
  """The scan of `x` along `axis` as XLA:CPU computes it; `combine(a, b)` applies the
  reduction elementwise in x's dtype (rounding to it), `init` is its identity."""
  y = np.moveaxis(np.asarray(x), axis, -1)
  init = np.asarray(init, y.dtype)
  with np.errstate(all="ignore"):
    out = _blocked(y, reverse, combine, init)
  return np.moveaxis(out, -1, axis)


def _blocked(y, reverse, combine, init):
  """The scan along the last axis: folded windows up to BASE, blocks beyond."""
  n = y.shape[-1]
  if n <= BASE:
    return _windows(y, reverse, combine, init)
  rows = -(-n // BASE)
  pad = np.broadcast_to(init, y.shape[:-1] + (rows * BASE - n,))
  blocks = np.concatenate([y, pad], axis=-1).reshape(y.shape[:-1] + (rows, BASE))
  part = _windows(blocks, reverse, combine, init)
  totals = part[..., 0] if reverse else part[..., -1]
  scanned = _blocked(totals, reverse, combine, init)
  edge = np.broadcast_to(init, totals.shape[:-1] + (1,))
  before = (np.concatenate([scanned[..., 1:], edge], axis=-1) if reverse else
            np.concatenate([edge, scanned[..., :-1]], axis=-1))   # exclusive
  out = combine(part, before[..., None]).astype(y.dtype, copy=False)
  return out.reshape(y.shape[:-1] + (rows * BASE,))[..., :n]


def _windows(y, reverse, combine, init):
  """Each output folds its window in window order, from the init."""
  n = y.shape[-1]
  out = np.empty_like(y)
  if not reverse:   # output i = fold(x[0..i]): one running value
    acc = np.broadcast_to(init, y.shape[:-1])
    for i in range(n):
      acc = combine(acc, y[..., i]).astype(y.dtype, copy=False)
      out[..., i] = acc
    return out
  # output i = fold(x[i..n-1]) left to right: the running values of every window open at k
  out[...] = init
  for k in range(n):
    out[..., :k + 1] = combine(out[..., :k + 1], y[..., k:k + 1])
  return out
