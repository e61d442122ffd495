"""sequential_vmap (jax.custom_batching.sequential_vmap): a custom_vmap whose rule runs the
function once per example, in a `lax.map` loop."""
from __future__ import annotations

from ember._src.base import tree_util
from ember._src.primitives.control.scans import map as lax_map
from ember._src.transforms.custom_batching import custom_vmap


def sequential_vmap(f):
  """`f` as a custom_vmap whose vmap loops over the batch (for functions that do not batch
  natively); its outputs are all batched."""
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    del axis_size
    leaves, tree = tree_util.tree_flatten(list(args))
    flags = tree_util.tree_leaves(in_batched)

    def one(mapped):
      it = iter(mapped)
      full = [next(it) if b else x for x, b in zip(leaves, flags)]
      return f(*tree_util.tree_unflatten(tree, full))
    out = lax_map(one, [x for x, b in zip(leaves, flags) if b])
    return out, tree_util.tree_map(lambda _: True, out)
  return f
