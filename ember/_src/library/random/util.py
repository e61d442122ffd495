"""What the distribution modules (gamma, gamma_family, discrete, linalg) share: a sampler's
key data and argument checks, an operand's dtype and shape, and `_any` (the stop test of
their whole-array loops). Their constant of an operand's dtype, `_c`, is xla_math's `_cst`.
"""
from __future__ import annotations

from ember._src import core
from ember._src.library.lax import api as lax
from ember._src.library.random.keys import _as_key_data, _shape_arg


def _key(name: str, key):
  return _as_key_data(name, key)[0]


def _method(name: str, method: str) -> None:
  if method not in ("exact", "approximate"):
    raise ValueError(f"method argument to `{name}` must be one of "
                     f"{{'exact', 'approximate'}}, got {method!r}")


def _canon_shape(name: str, shape):
  return None if shape is None else _shape_arg(name, shape)


def _dtype(x):
  return core.get_aval(x).dtype


def _shape(x):
  return tuple(core.get_aval(x).shape)


def _any(mask):
  return lax.reduce_or(mask, tuple(range(len(_shape(mask)))))
