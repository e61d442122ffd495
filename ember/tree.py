"""ember.tree: short names for the pytree utilities (jax.tree)."""
from ember._src.base.tree_util import static  # noqa: F401
from ember._src.base.tree_util import (  # noqa: F401
    tree_transpose as transpose, tree_unflatten as unflatten)
from ember._src.base.tree_util import public as _public

all = _public.tree_all  # noqa: A001
broadcast = _public.tree_broadcast
flatten = _public.tree_flatten
flatten_with_path = _public.tree_flatten_with_path
leaves = _public.tree_leaves
leaves_with_path = _public.tree_leaves_with_path
map = _public.tree_map  # noqa: A001
map_with_path = _public.tree_map_with_path
reduce = _public.tree_reduce
reduce_associative = _public.tree_reduce_associative
structure = _public.tree_structure
