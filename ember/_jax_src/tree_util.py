"""jax._src.tree_util's names that libraries use (flax.nnx's graphlib: `_registry`, tested
with `type(x) in _registry` to tell pytree node types from leaves): ember's registry."""
import collections
from collections.abc import Mapping

from ember._src.base import tree_util

# the containers ember flattens itself (JAX registers these in _registry too)
_BUILTIN_NODES = (tuple, list, dict, type(None), collections.OrderedDict,
                  collections.defaultdict)


class _NodeTypes(Mapping):
  """JAX's `_registry` as a live view: its keys are the node types, exactly as JAX's (the
  built-in containers and the registered classes; not namedtuples), its values ember's
  registration (flatten, unflatten, flatten_with_keys), None for the built-in ones."""

  def __getitem__(self, typ):
    if typ in _BUILTIN_NODES:
      return None
    return tree_util._registry[typ]

  def __contains__(self, typ):
    return typ in _BUILTIN_NODES or typ in tree_util._registry

  def __iter__(self):
    yield from _BUILTIN_NODES
    yield from list(tree_util._registry)

  def __len__(self):
    return len(_BUILTIN_NODES) + len(tree_util._registry)


_registry = _NodeTypes()
