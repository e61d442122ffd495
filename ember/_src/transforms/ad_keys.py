"""Typed PRNG keys through jvp, linearize and vjp: users see a key as one leaf whose tangent
(or cotangent) is a float0 array of the key's shape, as JAX's; ember's transformations
flatten a key into its data, each leaf with a float0 tangent of the data's shape. These
convert between the two and give JAX's errors for other values.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ember._src.base import dtypes, tree_util
from ember._src.core import ShapedArray, hitypes


def _is_key(x) -> bool:
  """A typed key: a transform node of tree_util that is not a hi value (core/hitypes.py:
  those are their lo values, with the lo values' own tangents)."""
  return type(x) in tree_util._transform_nodes and not hitypes.is_hi(x)


def keys_as_data(p_flat, t_flat):
  """Primal leaves with each typed key replaced by its data, and their tangents (a key's:
  a float0 array of the key's shape, JAX's) by float0 arrays of the data's shape."""
  ps, ts = [], []
  for p, t in zip(p_flat, t_flat):
    if _is_key(p):
      if getattr(t, "dtype", None) != dtypes.float0 or np.shape(t) != tuple(p.shape):
        raise TypeError(f"jvp: the tangent of a PRNG key array of shape {tuple(p.shape)} "
                        f"must be a float0 array of that shape, got {t!r}.")
      data = tree_util.tree_leaves(p)
      ps.extend(data)
      ts.extend(np.zeros(np.shape(d), dtypes.float0) for d in data)
    else:
      ps.append(p)
      ts.append(t)
  return ps, ts


def key_tangents(tangents):
  """`tangents` with each typed key's tangent (a key over float0 data, as ember's
  transformations unflatten it) a float0 array of the key's shape, as JAX's."""
  def fix(t):
    if _is_key(t):
      return np.zeros(tuple(t.shape), dtypes.float0)
    return t
  return tree_util.public.tree_map(fix, tangents)


def linearized_key_error(got: str, expected: str, key_type: str) -> Exception:
  return ValueError(f"linearized function called on tangent values inconsistent with the "
                    f"original primal values: got tangent {got} for primal {key_type} "
                    f"(expected {expected}).")


def type_str(aval) -> str:
  shape = ",".join(map(str, aval.shape))
  name = "float0" if aval.dtype == dtypes.float0 else np.dtype(aval.dtype).name
  return f"{name}[{shape}]"


def key_specs(out) -> list | None:
  """For each leaf of `out` as users flatten it: None, or for a typed key (its type as
  JAX prints it, its shape, the shapes of its data's leaves); None when `out` holds no
  key."""
  leaves = tree_util.public.tree_leaves(out)
  if not any(map(_is_key, leaves)):
    return None
  return [(f"{l.dtype}[{','.join(map(str, l.shape))}]", tuple(l.shape),
           [np.shape(d) for d in tree_util.tree_leaves(l)])
          if _is_key(l) else None for l in leaves]


def key_leaves_as_data(flat, key_specs, mismatch: Callable) -> list:
  """Tangent or cotangent leaves as users give them (one float0 array for each typed key,
  of the key's shape, as JAX's) as ember's transformations flatten them: one per leaf of
  the key's data. `mismatch(got, expected, key type)`: the error for another value."""
  if key_specs is None:
    return flat
  leaves = []
  for c, spec in zip(flat, key_specs):
    if spec is None:
      leaves.append(c)
      continue
    key_type, shape, data_shapes = spec
    if getattr(c, "dtype", None) != dtypes.float0 or np.shape(c) != shape:
      got = type_str(ShapedArray(np.shape(c), c.dtype)) if hasattr(c, "dtype") else repr(c)
      raise mismatch(got, f"float0[{','.join(map(str, shape))}]", key_type)
    leaves.extend(np.zeros(d, dtypes.float0) for d in data_shapes)
  return leaves


def vjp_key_error(got: str, expected: str, key_type: str) -> Exception:
  return ValueError(f"unexpected JAX type (e.g. shape/dtype) for argument to VJP function: "
                    f"got {got}, but expected {expected} because the corresponding output of "
                    f"the differentiated function had JAX type {key_type}")
