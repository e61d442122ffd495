"""Structural ops with XLA's semantics: broadcast_in_dim, slice and pad (negative and
interior padding), shared by their primitives' impls and hlo_eval's `broadcast`, `slice`
and `pad`."""
from __future__ import annotations

import numpy as np


def broadcast_in_dim(x, *, shape, broadcast_dimensions, sharding=None):
  perm = np.argsort(broadcast_dimensions)  # operand dims in target order
  x = np.transpose(x, perm)
  expanded = [1] * len(shape)
  for j, i in enumerate(perm):
    expanded[broadcast_dimensions[i]] = x.shape[j]
  return np.broadcast_to(x.reshape(expanded), shape)


def slice(x, *, start_indices, limit_indices, strides):  # noqa: A001 - lax.slice
  strides = strides or (1,) * x.ndim
  return x[tuple(np.s_[s:l:st] for s, l, st in zip(start_indices, limit_indices, strides))]


def pad(x, padding_value, *, padding_config):
  # Interior-dilate and add the non-negative edges, then crop the negative edges.
  big = [max(lo, 0) + max(hi, 0) + (0 if d == 0 else (d - 1) * (i + 1) + 1)
         for (lo, hi, i), d in zip(padding_config, x.shape)]
  out = np.full(big, padding_value, dtype=x.dtype)
  out[tuple(np.s_[max(lo, 0):n - max(hi, 0):i + 1]
            for (lo, hi, i), n in zip(padding_config, big))] = x
  return out[tuple(np.s_[max(-lo, 0):n - max(-hi, 0)]
                   for (lo, hi, _), n in zip(padding_config, big))]
