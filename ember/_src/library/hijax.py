"""JAX's hijax API (`jax.experimental.hijax`): user-defined high-level types (HiType, in
core/hitypes.py with the tracer that stands for their values in transformations) and
primitives over them (HiPrim).

A HiPrim runs its `expand` (its meaning in lower-level operations) on the values it is given:
a HiTracer as the library's value over its lo tracers, so the lo operations `expand` performs
are traced, differentiated and batched as any others. Its AD and batching rules (`jvp`,
`vjp_fwd`, `transpose`, `batch`) are not consulted: ember differentiates and batches the
expansion, which is what the rules of pack/unpack primitives such as flax's Variables say.
"""
from __future__ import annotations

from ember._src.base import tree_util
from ember._src.core import Tracer, hitypes
from ember._src.core.hitypes import (  # noqa: F401 (re-exported)
    HiType, aval_method, aval_property, hitype_of, register_hitype)
from ember._src.transforms.ad import Zero, instantiate_zeros  # noqa: F401 (re-exported)


class HiPrim:
  """The base of a primitive over hi types: subclasses set `in_avals`, `out_aval`, `params`
  in their `__init__` and give `expand`."""

  def __init__(self):
    for name in ("in_avals", "out_aval", "params"):
      if not hasattr(self, name):
        raise AttributeError(f"subclass __init__ should set `self.{name}`")
    self.check(*self.in_avals)

  def __getattr__(self, name):  # params read as attributes, as in JAX (self.treedef, ...)
    params = self.__dict__.get("params", {})
    if name in params:
      return params[name]
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

  def check(self, *in_avals):
    """Subclasses may check their input types here (JAX's hook)."""

  def expand(self, *args):
    raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

  def __call__(self, *args):
    traced = any(isinstance(x, Tracer) for x in tree_util.public.tree_leaves(args))
    out = self.expand(*map(hitypes.raised, args))
    # a hi value over traced lo values is a HiTracer to the caller, as JAX's hi results are
    return tree_util.public.tree_map(hitypes.as_tracer, out) if traced else out
